// The built-in checkpoint policies (jax.checkpoint_policies semantics).
#include <algorithm>

#include <fmt/format.h>

#include "ferry/checkpoint.h"
#include "ferry/error.h"
#include "ir/type.h"

namespace ferry::policies {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

bool is_dot(const Equation& e) { return e.primitive() == Primitive::dot_general; }
bool is_dot_without_batch_dims(const Equation& e) {
  if (!is_dot(e)) return false;
  DotDims d = e.dot_dims();
  return d.lhs_batch.empty() && d.rhs_batch.empty();
}

}  // namespace

const Policy everything_saveable{[](const Equation&) -> Decision { return Saveable{}; }, "everything_saveable"};
const Policy automatic{[](const Equation&) -> Decision { return Automatic{}; }, "automatic"};
const Policy nothing_saveable{[](const Equation&) -> Decision { return Recompute{}; }, "nothing_saveable"};
const Policy dots_saveable{
    [](const Equation& e) -> Decision { return is_dot(e) ? Decision{Saveable{}} : Decision{Recompute{}}; },
    "dots_saveable"};
const Policy checkpoint_dots = dots_saveable;
const Policy dots_with_no_batch_dims_saveable{
    [](const Equation& e) -> Decision {
      return is_dot_without_batch_dims(e) ? Decision{Saveable{}} : Decision{Recompute{}};
    },
    "dots_with_no_batch_dims_saveable"};

Policy offload_dot_with_no_batch_dims(MemoryKind src, MemoryKind dst) {
  ir::check_memory_kind(src, "offload_dot_with_no_batch_dims: src");
  ir::check_memory_kind(dst, "offload_dot_with_no_batch_dims: dst");
  return Policy(
      [src, dst](const Equation& e) -> Decision {
        return is_dot_without_batch_dims(e) ? Decision{Offloadable{src, dst}} : Decision{Recompute{}};
      },
      "offload_dot_with_no_batch_dims");
}

Policy save_only_these_names(std::vector<std::string> names) {
  return Policy(
      [names = std::move(names)](const Equation& e) -> Decision {
        bool named = e.primitive() == Primitive::checkpoint_name && contains(names, e.name());
        return named ? Decision{Saveable{}} : Decision{Recompute{}};
      },
      "save_only_these_names");
}

Policy save_any_names_but_these(std::vector<std::string> names) {
  return Policy(
      [names = std::move(names)](const Equation& e) -> Decision {
        bool named = e.primitive() == Primitive::checkpoint_name && !contains(names, e.name());
        return named ? Decision{Saveable{}} : Decision{Recompute{}};
      },
      "save_any_names_but_these");
}

Policy save_and_offload_only_these_names(std::vector<std::string> saved, std::vector<std::string> offloaded,
                                         MemoryKind src, MemoryKind dst) {
  ir::check_memory_kind(src, "save_and_offload_only_these_names: src");
  ir::check_memory_kind(dst, "save_and_offload_only_these_names: dst");
  for (const std::string& n : saved)
    if (contains(offloaded, n))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("save_and_offload_only_these_names: '{}' is both saved and offloaded; a name may be "
                              "in one list only", n));
  return Policy(
      [saved = std::move(saved), offloaded = std::move(offloaded), src, dst](const Equation& e) -> Decision {
        if (e.primitive() != Primitive::checkpoint_name) return Recompute{};
        if (contains(saved, e.name())) return Saveable{};
        if (contains(offloaded, e.name())) return Offloadable{src, dst};
        return Recompute{};
      },
      "save_and_offload_only_these_names");
}

Policy save_from_both_policies(Policy a, Policy b) {
  std::string name = fmt::format("save_from_both_policies({}, {})", a.name(), b.name());
  return Policy(
      [a = std::move(a), b = std::move(b)](const Equation& e) -> Decision {
        Decision da = a(e), db = b(e);
        if (std::holds_alternative<Saveable>(da) || std::holds_alternative<Saveable>(db)) return Saveable{};
        if (std::holds_alternative<Offloadable>(da)) return da;
        if (std::holds_alternative<Offloadable>(db)) return db;
        return Recompute{};
      },
      std::move(name));
}

}  // namespace ferry::policies
