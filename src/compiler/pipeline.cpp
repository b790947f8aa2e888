#include "compiler/pipeline.h"

#include <fmt/format.h>

#include "compiler/cse.h"
#include "compiler/dce.h"
#include "compiler/lower_copies.h"
#include "compiler/materialize_outputs.h"
#include "compiler/place_copies.h"
#include "compiler/schedule.h"
#include "compiler/simplify.h"
#include "ferry/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace ferry::compiler {

std::vector<Pass> passes_for(const CompileOptions& options) {
  // Clean-ups first: differentiation leaves duplicated and unused work behind, and constants and
  // identities that simplify turns into scalars or removes. Then every output
  // gets its own buffer, transfers between memory kinds become asynchronous copies, the scheduler
  // orders the rest for a low device peak, and the copies are placed around it by the cost model.
  // Buffer assignment (plan_memory, an analysis run by compile) plans the final order.
  return {
      {"cse", eliminate_common_subexpressions},
      {"dce", eliminate_dead_code},
      {"simplify", simplify},
      {"materialize_outputs", materialize_outputs},
      {"lower_copies", lower_copies},
      {"schedule", schedule_for_memory},
      {"place_copies", [options](ir::Program& p) { return place_copies(p, options); }},
  };
}

std::shared_ptr<const ir::Program> run_pipeline(const ir::Program& program, const CompileOptions& options,
                                                const std::function<void(const std::string&)>& dump) {
  auto p = std::make_shared<ir::Program>(program);
  ir::verify(*p);
  if (dump) dump("// input\n" + ir::print(*p));
  for (const Pass& pass : passes_for(options)) {
    bool changed = pass.run(*p);
    try {
      ir::verify(*p);
    } catch (const Error& e) {
      throw Error(ErrorCode::internal, fmt::format("pass {} produced an invalid program: {}", pass.name, e.message()));
    }
    if (dump) dump(fmt::format("// after {}{}\n{}", pass.name, changed ? "" : " (no change)", ir::print(*p)));
  }
  return p;
}

}  // namespace ferry::compiler
