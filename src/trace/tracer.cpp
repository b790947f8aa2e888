#include "trace/tracer.h"

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/limits.h"
#include "prims/registry.h"

namespace ferry::detail {
namespace {
thread_local std::vector<std::shared_ptr<Tracer>> g_stack;
}

Tracer::Tracer(std::string name, bool child) : program_(std::make_shared<ir::Program>()) {
  program_->name = std::move(name);
  if (child && !g_stack.empty()) parent_ = g_stack.back();
}

bool Tracer::is_ancestor(const Tracer* t) const {
  for (const Tracer* p = parent_.get(); p != nullptr; p = p->parent_.get())
    if (p == t) return true;
  return false;
}

void Tracer::record_named_decision(NamedDecision d) {
  Tracer* root = this;
  while (root->parent_ != nullptr) root = root->parent_.get();
  root->named_decisions_.push_back(std::move(d));
}

ir::ValueId Tracer::capture(const Tensor& t) {
  // Capture through the parent first, so each level of nesting sees the value as its own input.
  Tensor outer = t;
  if (t.tracer() != parent_) outer = Tensor(parent_, parent_->capture(t));
  for (size_t i = 0; i < captures_.size(); ++i)
    if (capture_keys_[i].first == outer.tracer().get() && capture_keys_[i].second == outer.id())
      return program_->inputs[program_->inputs.size() - captures_.size() + i];
  ir::ValueId id = program_->add_value(outer.tracer()->type(outer.id()));
  program_->inputs.push_back(id);
  captures_.push_back(outer);
  capture_keys_.emplace_back(outer.tracer().get(), outer.id());
  return id;
}

Tensor Tracer::add_input(const ir::Type& type) {
  if (finished_) throw Error(ErrorCode::internal, "add_input on a finished trace");
  if (!captures_.empty()) throw Error(ErrorCode::internal, "explicit inputs must come before captured ones");
  ir::check_size(type.dtype, type.shape, "lower: an argument's type");
  ir::ValueId id = program_->add_value(type);
  program_->inputs.push_back(id);
  return Tensor(shared_from_this(), id);
}

ir::ValueId Tracer::check_input(const Tensor& t, std::string_view what) {
  if (!t.defined())
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: an operand is an undefined Tensor", what));
  if (t.tracer().get() != this) {
    if (!t.tracer()->finished() && is_ancestor(t.tracer().get())) return capture(t);
    if (t.tracer()->finished())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: an operand belongs to a trace that has already finished (a Tensor kept "
                              "from an earlier trace cannot be used in a later one)", what));
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: operands come from different traces (a Tensor of an enclosing function "
                            "cannot be used inside another traced function; pass it as an argument)", what));
  }
  return t.id();
}

std::vector<Tensor> Tracer::bind(Primitive prim, ir::Params params, const std::vector<Tensor>& inputs,
                                 std::string name, std::vector<std::shared_ptr<const ir::Program>> bodies) {
  std::string_view op = prims::name_of(prim);
  if (finished_)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: the trace has already finished (a Tensor outlived its function)", op));
  ir::Equation eq;
  eq.prim = prim;
  std::vector<ir::Type> in_types;
  for (const Tensor& t : inputs) {
    eq.inputs.push_back(check_input(t, op));
    in_types.push_back(program_->type(eq.inputs.back()));
  }
  // Tracing applies the limits the parser does (ir/limits.h), so that what traces prints as text
  // that parses back: every type within the size rule, bodies nested no deeper than the limit.
  for (const auto& body : bodies)
    if (body && ir::nesting_depth(*body) + 1 > ir::kMaxNesting)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: its body nests subprograms (scan, cond, checkpoint, while_loop, ...) more than {} "
                              "levels deep (ferry's limit); nest fewer of them",
                              op, ir::kMaxNesting));
  std::vector<ir::Type> out_types = prims::infer_types(prim, params, in_types, bodies);
  for (const ir::Type& t : out_types) ir::check_size(t.dtype, t.shape, op);
  eq.params = std::move(params);
  eq.subprograms = std::move(bodies);
  eq.name = std::move(name);
  std::vector<Tensor> outs;
  for (ir::Type& t : out_types) {
    eq.outputs.push_back(program_->add_value(std::move(t)));
    outs.emplace_back(shared_from_this(), eq.outputs.back());
  }
  program_->equations.push_back(std::move(eq));
  return outs;
}

Tensor Tracer::bind1(Primitive prim, ir::Params params, const std::vector<Tensor>& inputs, std::string name) {
  return bind(prim, std::move(params), inputs, std::move(name)).at(0);
}

std::shared_ptr<ir::Program> Tracer::finish(const std::vector<Tensor>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    if (!t.defined())
      throw Error(ErrorCode::invalid_argument, fmt::format("result {} of the traced function is an undefined Tensor", i));
    program_->outputs.push_back(check_input(t, "return"));
  }
  finished_ = true;
  return program_;
}

Tracer& current_tracer(std::string_view op) {
  if (g_stack.empty())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: called outside of a traced function (use it inside a function given to jit)", op));
  return *g_stack.back();
}

void push_tracer(std::shared_ptr<Tracer> t) { g_stack.push_back(std::move(t)); }
void pop_tracer() { g_stack.pop_back(); }

}  // namespace ferry::detail

namespace ferry {

namespace {
const ir::Type& type_of(const Tensor& t) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, "an undefined Tensor has no type");
  return t.tracer()->type(t.id());
}
}  // namespace

DType Tensor::dtype() const { return type_of(*this).dtype; }
Shape Tensor::shape() const { return type_of(*this).shape; }
int64_t Tensor::rank() const { return type_of(*this).rank(); }
MemoryKind Tensor::memory_kind() const { return type_of(*this).kind; }
std::string Tensor::type_string() const { return defined() ? ir::to_string(type_of(*this)) : "undefined"; }

}  // namespace ferry
