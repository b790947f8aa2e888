// The kernel of `fused` (prims/fused_body.h): runs the body one block of whole rows at a time,
// keeping only that block of each value in 4-byte slots: f32 values, i32 values as their bit
// patterns, bool values as the f32 numbers 0 and 1. A block holds about
// kBlock elements (one row when a row is longer), so a block's values stay in L1/L2 and a softmax,
// logsumexp or layer norm reads each row from memory once. Blocks are fixed by the shapes alone and
// each row is reduced inside one block in a fixed order, so the result does not depend on the
// number of threads; consecutive runs of blocks go to the threads of parallel_for.
//
// The body is turned into a recipe once, when the executable is made (prepare_fused), so a run
// allocates nothing. In the recipe each value has a width: a *scalar* (one number, read with
// stride 0: constants and anything computed from scalars alone, even where the body's type is the
// full domain), a *row* (one number per row of the block) or *full* (every element of the block);
// and a place: an operand's memory read in place, or a slot of the thread's region, reused once
// the value is dead. A region that fits kStackRegion lives on the thread's stack, like a kernel's
// per-dimension bookkeeping, so that fusion adds nothing to the memory plan; a bigger one (rows
// longer than a block, or very large bodies) is the kernel's declared workspace, one region per
// thread.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <queue>

#include "prims/fused_body.h"
#include "runtime/cpu/check.h"
#include "runtime/cpu/convert.h"
#include "runtime/cpu/fused_math.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/tiles.h"

namespace ferry::runtime::cpu {
namespace {

using prims::FusedClass;

constexpr size_t idx(std::integral auto i) { return static_cast<size_t>(i); }

// Elements of a block, and the most stack one thread's region may use (16 blocks).
constexpr int64_t kBlock = prims::kFusedBlock;
constexpr int64_t kStackRegion = 16 * kBlock * 4;
// The fewest elements a block is cut down to so that its region fits the stack (fit_region_on_stack).
constexpr int64_t kMinBlock = 128;
enum class Width : uint8_t { scalar, row, full };
constexpr size_t kNumWidths = 3;
constexpr size_t idx(Width w) { return static_cast<size_t>(w); }

// Where a value's block lives while a block runs.
struct Place {
  enum class Kind : uint8_t { none, operand, slot } kind = Kind::none;
  int index = -1;  // operand number, or slot number (full slots first, then row slots, then scalars)
};

struct Step {
  enum class Op : uint8_t {
    elementwise, load, constant, expand_rows, gather, reduce, reduce_scalar, copy, iota, threefry, convert
  };
  Op op = Op::elementwise;
  Primitive prim = Primitive::add;
  ir::ValueId out = -1;
  ir::ValueId out2 = -1;  // threefry: the second word
  std::array<ir::ValueId, 4> in{-1, -1, -1, -1};
  int num_in = 0;
  uint32_t bits = 0;    // constant: the slot's 4 bytes
  DType in_dtype = DType::f32, out_dtype = DType::f32;  // convert; in_dtype also picks the integer arithmetic
  int64_t iota_inner = 1, iota_n = 1;  // iota: the value at linear index L is (L / inner) % n
  bool out_bool = false;  // the result is bool (logical arithmetic, as XLA's PRED)
  int operand = -1;     // load, gather: the operand read
  int gather = -1;      // gather: index into Recipe::gathers
};

// How a broadcast_in_dim reads a smaller operand for each element of the domain: per domain
// dimension, the operand stride (0 where the operand does not vary along it).
struct Gather {
  std::array<int64_t, ir::kMaxRank> stride{};
};

struct Recipe {
  prims::FusedLayout layout;
  int64_t block_rows = 1, block_elems = 0;
  std::vector<Width> width;  // by value (the body's, then copies of results)
  std::vector<Place> place;  // by value
  std::vector<ir::ValueId> result;  // by result: the value written out
  std::vector<Step> steps;
  std::vector<Gather> gathers;
  int full_slots = 0, row_slots = 0, scalar_slots = 0;
  int64_t region_bytes = 0;  // one thread's slots, then the block's pointer table (one per value)
};

int64_t floats_bytes(int64_t n) { return (n * 4 + 63) / 64 * 64; }

// The bytes of one thread's slots: full slots, row slots, then scalar slots (the pointer table follows).
int64_t slots_bytes(const Recipe& r) {
  return r.full_slots * floats_bytes(r.block_elems) + r.row_slots * floats_bytes(r.block_rows) +
         floats_bytes(r.scalar_slots);
}

// The bytes of one thread's region: its slots, then the block's pointer table (one per value).
int64_t region_bytes(const Recipe& r) { return slots_bytes(r) + floats_bytes(2 * static_cast<int64_t>(r.width.size())); }

bool aliasing(const ir::Program& body, const ir::Equation& eq) {
  switch (eq.prim) {
    // A reshape keeps the elements' order, a bitcast between f32 and i32 their bits.
    case Primitive::stop_gradient: case Primitive::checkpoint_name: case Primitive::reshape:
    case Primitive::bitcast_convert_type:
      return true;
    case Primitive::convert_element_type: {  // bool -> f32 and same-dtype conversions keep the slot's bits
      const DType from = body.type(eq.inputs[0]).dtype, to = body.type(eq.outputs[0]).dtype;
      return from == to || (from == DType::boolean && to == DType::f32);
    }
    default: return false;
  }
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Builds a body's recipe in the steps make_recipe runs, each a member below. Values that share
// memory (an identity's result and its operand) share a root: the value whose place they take.
class RecipeBuilder {
 public:
  explicit RecipeBuilder(const ir::Program& body)
      : body_(body), r_(std::make_shared<Recipe>()), root_(body.values.size()) {
    for (size_t v = 0; v < root_.size(); ++v) root_[v] = static_cast<ir::ValueId>(v);
  }

  // Blocks of whole rows, about kBlock elements each (one row when a row is longer); every value a
  // scalar with no place yet.
  void size_blocks() {
    Recipe& r = *r_;
    r.layout = prims::fused_layout(body_);
    const prims::FusedLayout& l = r.layout;
    r.block_rows = std::min(std::max<int64_t>(1, l.rows), l.cols > 0 ? std::max<int64_t>(1, kBlock / l.cols) : kBlock);
    r.block_elems = r.block_rows * l.cols;
    r.width.assign(body_.values.size(), Width::scalar);
    r.place.assign(body_.values.size(), Place{});
  }

  // Each operand's width. A full or row operand that is not bool is read in place; a scalar or
  // bool one is loaded into a slot by a step (a source operand is read only by its gathers).
  void read_operands() {
    for (size_t i = 0; i < body_.inputs.size(); ++i) {
      const ir::ValueId v = body_.inputs[i];
      const FusedClass c = value_class(v);
      if (c == FusedClass::source) continue;
      W(v) = c == FusedClass::full ? Width::full : c == FusedClass::row ? Width::row : Width::scalar;
      if (body_.type(v).dtype != DType::boolean && c != FusedClass::scalar) {
        r_->place[idx(v)] = Place{Place::Kind::operand, static_cast<int>(i)};
      } else {
        r_->steps.push_back(Step{.op = Step::Op::load, .out = v, .operand = static_cast<int>(i)});
      }
    }
  }

  // A step per equation, in body order, and the width of its results. An identity (a reshape, a
  // broadcast that keeps the width, ...) makes no step: its result shares its operand's root.
  void add_steps() {
    for (const ir::Equation& eq : body_.equations)
      if (std::optional<Step> s = step_for(eq)) r_->steps.push_back(*s);
  }

  // A result that is an operand's memory under another name (an identity of an input) is copied
  // into a slot: a result written in place over an operand must not change what another result
  // reads from it (results are written after every step).
  // The copy is a value of its own (numbered after the body's), so the body's own readers of the
  // identity still read the operand.
  void copy_results_read_in_place() {
    Recipe& r = *r_;
    r.result.assign(body_.outputs.begin(), body_.outputs.end());
    for (size_t o = 0; o < body_.outputs.size(); ++o) {
      const ir::ValueId v = body_.outputs[o];
      const ir::ValueId rt = root_[idx(v)];
      if (r.place[idx(rt)].kind != Place::Kind::operand) continue;
      const auto copy = static_cast<ir::ValueId>(r.width.size());
      r.width.push_back(r.width[idx(v)]);
      r.place.emplace_back();
      root_.push_back(copy);
      Step s{.op = Step::Op::copy, .out = copy, .num_in = 1};
      s.in[0] = rt;
      r.steps.push_back(s);
      for (size_t k = o; k < body_.outputs.size(); ++k)  // the same value returned twice: one copy
        if (body_.outputs[k] == v) r.result[k] = copy;
    }
  }

  // Slots by width, each reused once every value sharing it has been read for the last time
  // (outputs are read at the end of the block, after every step). Sets the count of slots of each
  // width and returns each root's slot among those of its width (-1: none).
  std::vector<int> assign_slots() {
    Recipe& r = *r_;
    const size_t nv = r.width.size();
    const int n = static_cast<int>(r.steps.size());
    std::vector<int> last(nv, -1);
    for (int i = 0; i < n; ++i) {
      const Step& s = r.steps[idx(i)];
      for (int k = 0; k < s.num_in; ++k) last[idx(root_[idx(s.in[idx(k)])])] = i;
    }
    for (ir::ValueId v : r.result) last[idx(root_[idx(v)])] = n;
    std::array<std::vector<int>, kNumWidths> free_slots;
    std::array<int, kNumWidths> count{0, 0, 0};
    // (last use, root) of slots in use, the soonest to die on top. (The slots a step frees may be
    // reused in any order: the count of each width, all the plan sees, is the most values of that
    // width alive at once.)
    using Held = std::pair<int, ir::ValueId>;
    std::priority_queue<Held, std::vector<Held>, std::greater<>> holding;
    std::vector<int> slot_of(nv, -1);
    for (int i = 0; i < n; ++i) {
      while (!holding.empty() && holding.top().first < i) {  // free the slots whose values died before step i
        const ir::ValueId v = holding.top().second;
        free_slots[idx(W(v))].push_back(slot_of[idx(v)]);
        holding.pop();
      }
      for (const ir::ValueId out : {r.steps[idx(i)].out, r.steps[idx(i)].out2}) {
        if (out < 0 || root_[idx(out)] != out) continue;
        auto& fl = free_slots[idx(W(out))];
        int slot;
        if (!fl.empty()) {
          slot = fl.back();
          fl.pop_back();
        } else {
          slot = count[idx(W(out))]++;
        }
        slot_of[idx(out)] = slot;
        // A value nothing reads (dead code the pass left) still gets a slot, freed once the step has run.
        holding.emplace(std::max(last[idx(out)], i), out);
      }
    }
    r.full_slots = count[idx(Width::full)];
    r.row_slots = count[idx(Width::row)];
    r.scalar_slots = count[idx(Width::scalar)];
    return slot_of;
  }

  // Every value's place: its root's operand, or its root's slot (numbered full slots first, then
  // row slots, then scalars); and the bytes of one thread's region.
  void place_values(const std::vector<int>& slot_of) {
    Recipe& r = *r_;
    const size_t nv = r.width.size();
    for (size_t v = 0; v < nv; ++v) {
      const ir::ValueId rt = root_[v];
      if (r.place[idx(rt)].kind == Place::Kind::operand) {
        r.place[v] = r.place[idx(rt)];
      } else if (slot_of[idx(rt)] >= 0) {
        int base = W(rt) == Width::full ? 0 : W(rt) == Width::row ? r.full_slots : r.full_slots + r.row_slots;
        r.place[v] = Place{Place::Kind::slot, base + slot_of[idx(rt)]};
      }
    }
    r.region_bytes = region_bytes(r);
  }

  // A body with many values alive at once (a multi-output group keeps every result until its block
  // ends: AdamW's updates of several leaves, say) needs a region larger than the stack allows,
  // which the memory plan would then hold as workspace, one region per thread (162.5 KiB for a
  // 6-layer MLP's AdamW step, a third of its peak). Blocks of fewer rows shrink the region onto the
  // stack instead, down to kMinBlock elements (below that the steps' per-block cost dominates).
  // A block still holds whole rows, each reduced inside it in the same order, so the bits do not
  // change.
  void fit_region_on_stack() {
    Recipe& r = *r_;
    const int64_t cols = std::max<int64_t>(1, r.layout.cols);
    while (r.region_bytes > kStackRegion && r.block_rows > 1 && (r.block_rows / 2) * cols >= kMinBlock) {
      r.block_rows /= 2;
      r.block_elems = r.block_rows * r.layout.cols;
      r.region_bytes = region_bytes(r);
    }
  }

  std::shared_ptr<const Recipe> recipe() const { return r_; }

 private:
  Width& W(ir::ValueId v) { return r_->width[idx(v)]; }
  FusedClass value_class(ir::ValueId v) const { return r_->layout.value_class[idx(v)]; }

  Width widest_input(const Step& s) {
    Width w = Width::scalar;
    for (int i = 0; i < s.num_in; ++i) w = std::max(w, W(s.in[idx(i)]));
    return w;
  }

  // Equation eq's step and its results' widths, or none for an identity (its result then shares
  // its operand's root).
  std::optional<Step> step_for(const ir::Equation& eq) {
    const ir::ValueId out = eq.outputs[0];
    Step s{.prim = eq.prim, .out = out, .num_in = static_cast<int>(eq.inputs.size())};
    for (size_t i = 0; i < eq.inputs.size(); ++i) s.in[i] = eq.inputs[i];
    s.out_bool = body_.type(out).dtype == DType::boolean;
    s.out_dtype = body_.type(out).dtype;
    if (!eq.inputs.empty()) s.in_dtype = body_.type(eq.inputs[0]).dtype;
    if (eq.prim == Primitive::select) s.in_dtype = body_.type(eq.inputs[1]).dtype;
    switch (eq.prim) {
      case Primitive::constant: return constant_step(eq, s);
      case Primitive::iota: return iota_step(eq, s);
      case Primitive::threefry2x32:
        s.op = Step::Op::threefry;
        s.out2 = eq.outputs[1];
        W(out) = W(s.out2) = widest_input(s);
        return s;
      case Primitive::reduce_sum: case Primitive::reduce_max: case Primitive::reduce_min:
        s.op = W(s.in[0]) == Width::scalar ? Step::Op::reduce_scalar : Step::Op::reduce;
        // A domain of one row has one number per reduction: a scalar (its only block has one row).
        W(out) = W(s.in[0]) == Width::scalar || r_->layout.rows == 1 ? Width::scalar : Width::row;
        return s;
      case Primitive::broadcast_in_dim: return broadcast_step(eq, s);
      default:
        W(out) = widest_input(s);
        if (aliasing(body_, eq)) {
          root_[idx(out)] = root_[idx(s.in[0])];
          return std::nullopt;
        }
        if (eq.prim == Primitive::convert_element_type) s.op = Step::Op::convert;
        return s;
    }
  }

  // A scalar holding the constant's 4 bytes.
  Step constant_step(const ir::Equation& eq, Step s) {
    const double v = std::get<ir::ConstantParams>(eq.params).value;
    s.op = Step::Op::constant;
    if (s.out_dtype == DType::i32) {  // as constant_kernel converts it (convert.h)
      s.bits = static_cast<uint32_t>(float_to_i32(v));
    } else {
      s.bits = bits_of(s.out_bool ? (v != 0 ? 1.0f : 0.0f) : static_cast<float>(v));
    }
    W(s.out) = Width::scalar;
    return s;
  }

  Step iota_step(const ir::Equation& eq, Step s) {
    const auto& p = std::get<ir::IotaParams>(eq.params);
    const Shape& shape = body_.type(s.out).shape;
    s.op = Step::Op::iota;
    s.iota_n = shape.at(idx(p.dimension));
    for (size_t d = idx(p.dimension) + 1; d < shape.size(); ++d) s.iota_inner *= shape[d];
    W(s.out) = value_class(s.out) == FusedClass::scalar ? Width::scalar : Width::full;
    return s;
  }

  // A source operand is gathered from memory, a row value expanded to full; otherwise the
  // broadcast is an identity (a scalar stays one) and makes no step.
  std::optional<Step> broadcast_step(const ir::Equation& eq, Step s) {
    const ir::ValueId x = s.in[0];
    if (value_class(x) == FusedClass::source) {
      const auto& dims = std::get<ir::BroadcastInDimParams>(eq.params).broadcast_dimensions;
      const Shape& xs = body_.type(x).shape;
      Gather g;
      int64_t stride = 1;
      for (size_t d = xs.size(); d-- > 0;) {
        if (xs[d] != 1) g.stride[idx(dims[d])] = stride;
        stride *= xs[d];
      }
      s.op = Step::Op::gather;
      s.gather = static_cast<int>(r_->gathers.size());
      r_->gathers.push_back(g);
      for (size_t i = 0; i < body_.inputs.size(); ++i)
        if (body_.inputs[i] == x) s.operand = static_cast<int>(i);
      W(s.out) = Width::full;
      return s;
    }
    if (W(x) == Width::row && value_class(s.out) == FusedClass::full) {
      s.op = Step::Op::expand_rows;
      W(s.out) = Width::full;
      return s;
    }
    W(s.out) = W(x);
    root_[idx(s.out)] = root_[idx(x)];
    return std::nullopt;
  }

  const ir::Program& body_;
  std::shared_ptr<Recipe> r_;
  std::vector<ir::ValueId> root_;  // by value: the value whose place it shares
};

// The body's recipe: its blocks, the steps that compute one block, and where each value lives.
std::shared_ptr<const Recipe> make_recipe(const ir::Program& body) {
  RecipeBuilder b(body);
  b.size_blocks();
  b.read_operands();
  b.add_steps();
  b.copy_results_read_in_place();
  b.place_values(b.assign_slots());
  b.fit_region_on_stack();
  return b.recipe();
}

// Threads that may run blocks at once: each needs a region of the workspace.
int64_t regions() { return std::max(1, num_threads()); }

inline float truth(bool b) { return b ? 1.0f : 0.0f; }

// One thread's view of a block: where each value's elements are.
struct Block {
  int64_t row0 = 0, rows = 0, elems = 0;  // first row, rows, elements (rows * cols)
  const float** at = nullptr;             // by value
};

int64_t count(Width w, const Block& b) { return w == Width::full ? b.elems : w == Width::row ? b.rows : 1; }

// Slot k of one thread's region (the layout of Recipe::region_bytes).
struct Slots {
  char* base;
  const Recipe& r;
  float* operator[](int k) const {
    if (k < r.full_slots) return reinterpret_cast<float*>(base + k * floats_bytes(r.block_elems));
    char* rows = base + r.full_slots * floats_bytes(r.block_elems);
    if (k < r.full_slots + r.row_slots) return reinterpret_cast<float*>(rows + (k - r.full_slots) * floats_bytes(r.block_rows));
    return reinterpret_cast<float*>(rows + r.row_slots * floats_bytes(r.block_rows)) + (k - r.full_slots - r.row_slots);
  }
};

void run_block(const ir::Equation& eq, const Recipe& r, std::span<const ConstView> inputs, const Slots& slot,
               Block& b) {
  const prims::FusedLayout& l = r.layout;
  const ir::Program& body = *eq.subprograms[0];
  const FusedMath& math = fused_math();
  // Operands read in place: their block.
  for (size_t v = 0; v < r.place.size(); ++v) {
    const Place& pl = r.place[v];
    if (pl.kind == Place::Kind::operand)
      b.at[v] = inputs[idx(pl.index)].as<float>() + (r.width[v] == Width::full ? b.row0 * l.cols : b.row0);
    else if (pl.kind == Place::Kind::slot)
      b.at[v] = slot[pl.index];
  }
  for (const Step& s : r.steps) {
    const Width w = r.width[idx(s.out)];
    const int64_t n = count(w, b);
    float* y = const_cast<float*>(b.at[idx(s.out)]);
    auto in = [&](int k) { return b.at[idx(s.in[idx(k)])]; };
    auto is_scalar = [&](int k) { return r.width[idx(s.in[idx(k)])] == Width::scalar; };
    switch (s.op) {
      case Step::Op::constant: std::memcpy(y, &s.bits, 4); break;
      case Step::Op::load: {
        const ConstView& x = inputs[idx(s.operand)];
        const int64_t first = w == Width::full ? b.row0 * l.cols : w == Width::row ? b.row0 : 0;
        if (x.type->dtype == DType::boolean)
          for (int64_t i = 0; i < n; ++i) y[i] = truth(x.as<uint8_t>()[first + i] != 0);
        else  // f32 or i32: the 4 bytes as they are
          std::memcpy(y, x.as<char>() + first * 4, static_cast<size_t>(n) * 4);
        break;
      }
      case Step::Op::iota: {
        // The value at the block's linear index L is (L / inner) % n: runs of `inner` equal values
        // (inner > 1), or counts up to n and around again (inner == 1, a loop that vectorizes).
        const bool as_i32 = s.out_dtype == DType::i32;
        auto* wy = reinterpret_cast<uint32_t*>(y);
        if (w == Width::scalar) {
          if (as_i32) wy[0] = 0;
          else y[0] = 0.0f;
          break;
        }
        const int64_t first = b.row0 * l.cols;
        int64_t q = (first / s.iota_inner) % s.iota_n, r0 = first % s.iota_inner;
        for (int64_t i = 0; i < n;) {
          const int64_t run = s.iota_inner == 1 ? std::min(n - i, s.iota_n - q) : std::min(n - i, s.iota_inner - r0);
          const auto q32 = static_cast<int32_t>(q);
          if (s.iota_inner == 1) {
            if (as_i32) for (int64_t j = 0; j < run; ++j) wy[i + j] = static_cast<uint32_t>(q32) + static_cast<uint32_t>(j);
            else for (int64_t j = 0; j < run; ++j) y[i + j] = static_cast<float>(q32 + static_cast<int32_t>(j));
            q = 0;
          } else {
            if (as_i32) std::fill_n(wy + i, run, static_cast<uint32_t>(q32));
            else std::fill_n(y + i, run, static_cast<float>(q32));
            r0 = 0;
            if (++q == s.iota_n) q = 0;
          }
          i += run;
        }
        break;
      }
      case Step::Op::threefry:
        math.threefry(in(0), is_scalar(0), in(1), is_scalar(1), in(2), is_scalar(2), in(3), is_scalar(3), y,
                      const_cast<float*>(b.at[idx(s.out2)]), n);
        break;
      case Step::Op::convert: math.convert(eq, s.in_dtype, s.out_dtype, in(0), y, n); break;
      case Step::Op::copy: std::copy_n(in(0), n, y); break;
      case Step::Op::expand_rows: {
        const float* x = in(0);
        for (int64_t i = 0; i < b.rows; ++i) std::fill_n(y + i * l.cols, l.cols, x[i]);
        break;
      }
      case Step::Op::gather: {
        const Gather& g = r.gathers[idx(s.gather)];
        const ConstView& x = inputs[idx(s.operand)];
        const Shape& d = l.domain;
        const int64_t rank = static_cast<int64_t>(d.size());
        // The multi-index of the block's first element, then a walk along the last dimension.
        std::array<int64_t, ir::kMaxRank> index{};
        int64_t rest = b.row0 * l.cols, off = 0;
        for (int64_t k = rank; k-- > 0;) {
          index[idx(k)] = rest % d[idx(k)];
          rest /= d[idx(k)];
          off += index[idx(k)] * g.stride[idx(k)];
        }
        const int64_t inner = rank > 0 ? d[idx(rank - 1)] : 1;
        const int64_t step = rank > 0 ? g.stride[idx(rank - 1)] : 0;
        const bool as_bool = x.type->dtype == DType::boolean;
        auto* wy = reinterpret_cast<uint32_t*>(y);  // f32 and i32 alike: the 4 bytes as they are
        for (int64_t i = 0; i < n;) {
          const int64_t run = std::min(n - i, inner - (rank > 0 ? index[idx(rank - 1)] : 0));
          if (as_bool)
            for (int64_t j = 0; j < run; ++j) y[i + j] = truth(x.as<uint8_t>()[off + j * step] != 0);
          else if (step == 1)
            std::memcpy(y + i, x.as<uint32_t>() + off, static_cast<size_t>(run) * 4);
          else
            for (int64_t j = 0; j < run; ++j) wy[i + j] = x.as<uint32_t>()[off + j * step];
          i += run;
          // Advance the multi-index past the run (the odometer carries into the outer dimensions).
          if (rank == 0) break;
          off += run * step;
          index[idx(rank - 1)] += run;
          for (int64_t k = rank - 1; k > 0 && index[idx(k)] == d[idx(k)]; --k) {
            off -= index[idx(k)] * g.stride[idx(k)];
            index[idx(k)] = 0;
            ++index[idx(k - 1)];
            off += g.stride[idx(k - 1)];
          }
        }
        break;
      }
      case Step::Op::reduce: math.reduce_rows(s.prim, in(0), b.rows, l.cols, 1, y); break;
      case Step::Op::reduce_scalar:  // every element of every row is the same number
        math.reduce_rows(s.prim, in(0), 1, l.cols, 0, y);
        break;
      case Step::Op::elementwise:
        switch (s.prim) {
          case Primitive::select:
            math.select(in(0), is_scalar(0), in(1), is_scalar(1), in(2), is_scalar(2), y, n);
            break;
          case Primitive::clamp:
            math.clamp(in(0), is_scalar(0), in(1), is_scalar(1), in(2), is_scalar(2), y, n);
            break;
          default:
            if (s.num_in == 1) {
              if (is_scalar(0) && n > 1) kernel_bug(eq, "a unary operation widens its operand");
              if (s.in_dtype == DType::i32) math.int_unary(eq, s.prim, in(0), y, n);
              else math.unary(eq, s.prim, in(0), y, n);
            } else if (s.in_dtype == DType::i32) {
              math.int_binary(eq, s.prim, in(0), is_scalar(0), in(1), is_scalar(1), y, n);
            } else {
              math.binary(eq, s.prim, s.out_bool && body.type(s.in[0]).dtype == DType::boolean, in(0), is_scalar(0), in(1),
                     is_scalar(1), y, n);
            }
        }
        break;
    }
  }
}

// Writes the block's part of each result.
void store_block(const ir::Equation& eq, const Recipe& r, std::span<const MutView> outputs, const Block& b,
                 bool first_block) {
  const ir::Program& body = *eq.subprograms[0];
  const prims::FusedLayout& l = r.layout;
  for (size_t o = 0; o < body.outputs.size(); ++o) {
    const FusedClass c = l.value_class[idx(body.outputs[o])];
    const ir::ValueId v = r.result[o];
    int64_t first = 0, n = 1;
    if (c == FusedClass::full) first = b.row0 * l.cols, n = b.elems;
    else if (c == FusedClass::row) first = b.row0, n = b.rows;
    else if (!first_block) continue;
    const float* x = b.at[idx(v)];
    const bool splat = r.width[idx(v)] == Width::scalar;
    if (outputs[o].type->dtype == DType::boolean) {
      uint8_t* y = outputs[o].as<uint8_t>() + first;
      for (int64_t i = 0; i < n; ++i) y[i] = x[splat ? 0 : i] != 0.0f;
    } else if (splat) {  // f32 or i32: the 4 bytes as they are
      uint32_t u;
      std::memcpy(&u, x, 4);
      std::fill_n(outputs[o].as<uint32_t>() + first, n, u);
    } else {
      std::memcpy(outputs[o].as<uint32_t>() + first, x, static_cast<size_t>(n) * 4);
    }
  }
}

}  // namespace

std::shared_ptr<const void> prepare_fused(const ir::Equation& eq) { return make_recipe(*eq.subprograms.at(0)); }

int64_t fused_workspace(const ir::Equation& eq, std::span<const ir::Type* const>, std::span<const ir::Type* const>) {
  const int64_t region = Workspace::piece(make_recipe(*eq.subprograms.at(0))->region_bytes);
  return region <= kStackRegion ? 0 : regions() * region;
}

void fused_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                  Workspace& workspace) {
  // The recipe the backend prepared with the executable; a kernel called on its own makes one.
  std::shared_ptr<const Recipe> own;
  const Recipe* prepared = workspace.prepared<Recipe>();
  if (prepared == nullptr) own = make_recipe(*eq.subprograms.at(0));
  const Recipe& r = prepared ? *prepared : *own;
  const ir::Program& body = *eq.subprograms.at(0);
  if (inputs.size() != body.inputs.size() || outputs.size() != body.outputs.size())
    kernel_bug(eq, "operand or result count differs from the body's");
  const int64_t rows = r.layout.rows;
  if (rows == 0) return;
  const int64_t blocks = (rows + r.block_rows - 1) / r.block_rows;
  const int64_t region = Workspace::piece(r.region_bytes);
  const bool on_stack = region <= kStackRegion;
  const int64_t available = on_stack ? regions() : workspace.size() / region;
  const int64_t parts = std::min({regions(), blocks, available});
  if (parts < 1) kernel_bug(eq, "the workspace holds no region");
  char* base = on_stack ? nullptr : workspace.take<char>(parts * region);
  const size_t nv = r.width.size();
  // Runs blocks [first, last) in one region, skipping block 0 unless `with_first`.
  auto run_blocks = [&](char* reg, int64_t first, int64_t last, bool with_first) {
    // The region: full slots, row slots, scalar slots, then the block's pointer table.
    Slots slot{reg, r};
    Block b;
    b.at = reinterpret_cast<const float**>(reg + slots_bytes(r));
    std::fill_n(b.at, nv, nullptr);
    for (int64_t blk = first; blk < last; ++blk) {
      if (blk == 0 && !with_first) continue;
      b.row0 = blk * r.block_rows;
      b.rows = std::min(r.block_rows, rows - b.row0);
      b.elems = b.rows * r.layout.cols;
      run_block(eq, r, inputs, slot, b);
      store_block(eq, r, outputs, b, blk == 0);
    }
  };
  // Part c runs blocks [c * blocks / parts, (c + 1) * blocks / parts) in its own region. Block 0,
  // which also writes the scalar results, runs last, after every other block has read the scalar
  // operands: so a scalar result may take a scalar operand's buffer (fused_in_place_inputs).
  parallel_for(parts, 1, [&](int64_t c0, int64_t c1) {
    alignas(64) char stack[kStackRegion];  // untouched unless on_stack
    for (int64_t c = c0; c < c1; ++c)
      run_blocks(on_stack ? stack : base + c * region, c * blocks / parts, (c + 1) * blocks / parts, false);
  });
  alignas(64) char stack[kStackRegion];
  run_blocks(on_stack ? stack : base, 0, 1, true);
}

}  // namespace ferry::runtime::cpu
