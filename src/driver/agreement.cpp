#include "driver/agreement.h"

#include <functional>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/ops.h"
#include "ir/printer.h"
#include "ir/type.h"
#include "runtime/process_group.h"

namespace ferry::driver {
namespace {

// "arg0 arg1 ...|hash": the argument types, then the hash of the program's text.
std::string fingerprint(const ir::Program& p) {
  std::string f;
  for (ir::ValueId v : p.inputs) f += ir::to_string(p.type(v)) + " ";
  f += fmt::format("|{:016x}", std::hash<std::string>{}(ir::print(p)));
  return f;
}

std::vector<std::string> split_arguments(const std::string& f) {
  std::vector<std::string> out;
  std::string part;
  for (char c : f.substr(0, f.find('|'))) {
    if (c == ' ') {
      out.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  return out;
}

}  // namespace

bool has_collectives(const ir::Program& program) {
  for (const ir::Equation& eq : program.equations) {
    if (ir::has(eq.prim, ir::kCollective)) return true;
    for (const auto& body : eq.subprograms)
      if (body && has_collectives(*body)) return true;
  }
  return false;
}

void check_processes_agree(const ir::Program& program) {
  if (!runtime::processes::joined() || runtime::processes::count() == 1) return;
  const std::vector<std::string> all =
      runtime::processes::all_gather_text(fingerprint(program), "the check that the processes compiled one program");
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i] == all[0]) continue;
    const std::vector<std::string> a = split_arguments(all[0]), b = split_arguments(all[i]);
    std::string what;
    if (a.size() != b.size()) {
      what = fmt::format("process 0's takes {} arguments and process {}'s {}", a.size(), i, b.size());
    } else {
      for (size_t k = 0; k < a.size() && what.empty(); ++k)
        if (a[k] != b[k]) what = fmt::format("argument {} is {} on process 0 and {} on process {}", k, a[k], b[k], i);
      if (what.empty())
        what = fmt::format("the arguments agree, but process {} compiled another program from them (other code, "
                           "options or policy)",
                           i);
    }
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the processes compiled different programs, so their collectives cannot meet: {} (every "
                            "process must call the same compiled step with arguments of the same types)",
                            what));
  }
}

}  // namespace ferry::driver
