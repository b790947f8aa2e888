#include "runtime/executable.h"

#include <cstring>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cpu/kernels.h"

namespace ferry::runtime {

Array HeapBufferSource::allocate(const ir::Type& type) {
  return Array::allocate(type.dtype, type.shape, type.kind);
}

Executable::Executable(std::shared_ptr<const ir::Program> program, const std::string& backend)
    : program_(std::move(program)) {
  if (backend != "cpu")
    throw Error(ErrorCode::unimplemented, fmt::format("backend \"{}\" is not available; this build has \"cpu\"", backend));
  const ir::Program& p = *program_;
  // Last use of each value; program outputs live to the end.
  std::vector<int> last_use(p.values.size(), -1);
  for (size_t i = 0; i < p.equations.size(); ++i)
    for (ir::ValueId v : p.equations[i].inputs) last_use[static_cast<size_t>(v)] = static_cast<int>(i);
  for (ir::ValueId v : p.outputs) last_use[static_cast<size_t>(v)] = static_cast<int>(p.equations.size());
  instructions_.resize(p.equations.size());
  for (size_t i = 0; i < p.equations.size(); ++i) {
    const ir::Equation& eq = p.equations[i];
    Instruction& ins = instructions_[i];
    ins.eq = &eq;
    ins.kernel = cpu::kernel(eq.prim);
    if (ins.kernel == nullptr || !eq.subprograms.empty())
      throw Error(ErrorCode::unimplemented, fmt::format("the cpu backend has no kernel for {}", primitive_name(eq.prim)));
    // Outputs nobody reads die right after they are made.
    for (ir::ValueId v : eq.outputs)
      if (last_use[static_cast<size_t>(v)] < 0) ins.release_after.push_back(v);
  }
  for (size_t v = 0; v < last_use.size(); ++v)
    if (last_use[v] >= 0 && last_use[v] < static_cast<int>(p.equations.size()))
      instructions_[static_cast<size_t>(last_use[v])].release_after.push_back(static_cast<ir::ValueId>(v));
}

std::vector<Array> Executable::run(const std::vector<Array>& args, BufferSource& buffers) const {
  const ir::Program& p = *program_;
  if (args.size() != p.inputs.size())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{} takes {} argument(s), got {}", p.name, p.inputs.size(), args.size()));
  std::vector<Array> slots(p.values.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Type& want = p.type(p.inputs[i]);
    const Array& a = args[i];
    if (!a.defined() || a.dtype() != want.dtype || a.shape() != want.shape || a.memory_kind() != want.kind) {
      std::string got = a.defined() ? ir::to_string(ir::Type{a.dtype(), a.shape(), a.memory_kind()}) : "an empty Array";
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("argument {} of {} must be {}, got {}", i, p.name, ir::to_string(want), got));
    }
    slots[static_cast<size_t>(p.inputs[i])] = a;
  }
  std::vector<ConstView> in;
  std::vector<MutView> out;
  for (const Instruction& ins : instructions_) {
    const ir::Equation& eq = *ins.eq;
    in.clear();
    out.clear();
    for (ir::ValueId v : eq.inputs) in.push_back({slots[static_cast<size_t>(v)].data(), &p.type(v)});
    for (ir::ValueId v : eq.outputs) {
      Array& a = slots[static_cast<size_t>(v)];
      a = buffers.allocate(p.type(v));
      out.push_back({a.mutable_data(), &p.type(v)});
    }
    ins.kernel(eq, in, out);
    for (ir::ValueId v : ins.release_after) slots[static_cast<size_t>(v)] = Array();
  }
  std::vector<Array> results;
  std::vector<bool> is_input(p.values.size(), false);
  for (ir::ValueId v : p.inputs) is_input[static_cast<size_t>(v)] = true;
  for (ir::ValueId v : p.outputs) {
    const Array& a = slots[static_cast<size_t>(v)];
    if (is_input[static_cast<size_t>(v)]) {
      Array copy = buffers.allocate(p.type(v));
      std::memcpy(copy.mutable_data(), a.data(), a.nbytes());
      results.push_back(std::move(copy));
    } else {
      results.push_back(a);
    }
  }
  return results;
}

}  // namespace ferry::runtime
