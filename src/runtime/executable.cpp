#include "runtime/executable.h"

#include <cstring>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cpu/kernels.h"
#include "runtime/storage.h"

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
    if (eq.prim == Primitive::scan || eq.prim == Primitive::checkpoint) {
      ins.body = std::make_shared<const Executable>(eq.subprograms.at(0), backend);
    } else {
      ins.kernel = cpu::kernel(eq.prim);
      if (ins.kernel == nullptr || !eq.subprograms.empty())
        throw Error(ErrorCode::unimplemented, fmt::format("the cpu backend has no kernel for {}", primitive_name(eq.prim)));
    }
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
    if (ins.body) {
      if (eq.prim == Primitive::scan) {
        run_scan(ins, slots, buffers);
      } else {  // checkpoint: outside differentiation it is just its body
        std::vector<Array> args;
        for (ir::ValueId v : eq.inputs) args.push_back(slots[static_cast<size_t>(v)]);
        std::vector<Array> outs = ins.body->run(args, buffers);
        for (size_t i = 0; i < outs.size(); ++i) slots[static_cast<size_t>(eq.outputs[i])] = std::move(outs[i]);
      }
      for (ir::ValueId v : ins.release_after) slots[static_cast<size_t>(v)] = Array();
      continue;
    }
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

namespace {
// An Array over bytes another Array owns (kept alive by `owner`).
Array view(const Array& owner, size_t offset, const ir::Type& type) {
  auto s = std::make_shared<detail::Storage>();
  s->data = static_cast<char*>(const_cast<void*>(owner.data())) + offset;
  s->bytes = static_cast<size_t>(type.size_bytes());
  s->kind = type.kind;
  s->release = [keep = owner](void*) {};
  return Array(std::move(s), type.dtype, type.shape, type.kind);
}
}  // namespace

void Executable::run_scan(const Instruction& ins, std::vector<Array>& slots, BufferSource& buffers) const {
  const ir::Equation& eq = *ins.eq;
  const ir::Program& body = ins.body->program();
  const auto& p = std::get<ir::ScanParams>(eq.params);
  const size_t nc = static_cast<size_t>(p.num_carry), nx = static_cast<size_t>(p.num_xs);
  std::vector<Array> args(eq.inputs.size());
  for (size_t i = 0; i < eq.inputs.size(); ++i) args[i] = slots[static_cast<size_t>(eq.inputs[i])];
  std::vector<Array> ys;
  for (size_t j = nc; j < eq.outputs.size(); ++j) ys.push_back(buffers.allocate(program_->type(eq.outputs[j])));
  std::vector<Array> xs(args.begin() + static_cast<std::ptrdiff_t>(nc), args.begin() + static_cast<std::ptrdiff_t>(nc + nx));
  for (int64_t step = 0; step < p.length; ++step) {
    int64_t i = p.reverse ? p.length - 1 - step : step;
    for (size_t j = 0; j < nx; ++j) {
      const ir::Type& t = body.type(body.inputs[nc + j]);
      args[nc + j] = view(xs[j], static_cast<size_t>(i * t.size_bytes()), t);
    }
    std::vector<Array> out = ins.body->run(args, buffers);
    for (size_t j = 0; j < nc; ++j) args[j] = std::move(out[j]);
    for (size_t j = 0; j < ys.size(); ++j) {
      size_t bytes = out[nc + j].nbytes();
      if (bytes) std::memcpy(static_cast<char*>(ys[j].mutable_data()) + static_cast<size_t>(i) * bytes, out[nc + j].data(), bytes);
    }
  }
  for (size_t j = 0; j < nc; ++j) {
    // A zero-length scan returns its initial carry: copy it so outputs never alias inputs.
    Array a = args[j];
    if (p.length == 0) {
      Array copy = buffers.allocate(program_->type(eq.outputs[j]));
      if (a.nbytes()) std::memcpy(copy.mutable_data(), a.data(), a.nbytes());
      a = copy;
    }
    slots[static_cast<size_t>(eq.outputs[j])] = a;
  }
  for (size_t j = 0; j < ys.size(); ++j) slots[static_cast<size_t>(eq.outputs[nc + j])] = ys[j];
}

}  // namespace ferry::runtime
