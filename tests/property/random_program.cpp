#include "property/random_program.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>

namespace ferry::property {
namespace {

// Values stay small: property tests need many programs, not big ones.
constexpr int64_t kMaxElements = 64;
constexpr int kMaxDepth = 2;  // checkpoints and scans nest this deep
const char* const kNames[] = {"a", "b", "c", "d"};

int64_t elements(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  // rng_() % n rather than std::uniform_int_distribution, whose output differs between libraries.
  int pick(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  int64_t dim() { return 1 + pick(4); }
  Shape shape(int max_rank = 3) {
    Shape s(static_cast<size_t>(pick(max_rank + 1)));
    for (int64_t& d : s) d = dim();
    return s;
  }

  // A block over `inputs` that may capture `outer` values; `size` top-level ops; outputs coerced
  // to `required` shapes first, then `free` outputs of any shape.
  Block block(const std::vector<Shape>& inputs, const std::vector<Shape>& outer, int size, int depth,
              const std::vector<Shape>& required, int free) {
    Block b;
    b.inputs = inputs;
    std::vector<Shape> shapes = inputs;
    for (int i = 0, n = outer.empty() ? 0 : pick(3); i < n; ++i) {
      b.captures.push_back(pick(static_cast<int>(outer.size())));
      b.capture_shapes.push_back(outer[static_cast<size_t>(b.captures.back())]);
      shapes.push_back(b.capture_shapes.back());
    }
    Ctx ctx{b, shapes, depth};
    for (int i = 0; i < size; ++i) random_op(ctx, size);
    // Scan carries go through tanh: values that compound step after step would overflow, and a
    // cotangent of zero times an infinity is NaN with or without checkpoints alike.
    for (const Shape& s : required) b.outputs.push_back(bounded(ctx, coerce(ctx, operand(ctx), s)));
    for (int i = 0; i < free; ++i) b.outputs.push_back(i == 0 ? last(ctx) : operand(ctx));
    return b;
  }

  PolicySpec policy(bool allow_both = true) {
    PolicySpec p;
    p.kind = static_cast<PolicySpec::Kind>(pick(allow_both ? 10 : 9));
    if (p.kind == PolicySpec::both) {
      p.a = std::make_shared<PolicySpec>(policy(false));
      p.b = std::make_shared<PolicySpec>(policy(false));
      return p;
    }
    p.dst = chance(70) ? MemoryKind::pinned_host : MemoryKind::unpinned_host;
    p.salt = static_cast<uint32_t>(rng_());
    for (const char* n : kNames) {
      int where = pick(3);  // saved, offloaded, neither (disjoint lists)
      if (where == 0) p.saved.push_back(n);
      if (where == 1) p.offloaded.push_back(n);
    }
    return p;
  }

 private:
  struct Ctx {
    Block& b;
    std::vector<Shape> shapes;
    int depth;
  };

  int last(Ctx& c) { return static_cast<int>(c.shapes.size()) - 1; }
  int bounded(Ctx& c, int v) {
    Op op;
    op.kind = OpKind::unary;
    op.code = 2;  // tanh
    op.args = {v};
    op.outs = {c.shapes[static_cast<size_t>(v)]};
    return push(c, std::move(op));
  }
  // Mostly recent values (deep chains), sometimes any value (wide graphs).
  int operand(Ctx& c) {
    int n = static_cast<int>(c.shapes.size());
    if (chance(30)) return pick(n);
    int back = 0;
    while (back + 1 < n && chance(40)) ++back;
    return n - 1 - back;
  }
  const Shape& shape_of(Ctx& c, int v) { return c.shapes[static_cast<size_t>(v)]; }

  int push(Ctx& c, Op op) {
    int first = static_cast<int>(c.shapes.size());
    for (const Shape& s : op.outs) c.shapes.push_back(s);
    c.b.ops.push_back(std::move(op));
    return first;
  }
  int simple(Ctx& c, OpKind kind, std::vector<int> args, Shape out, Axes p1 = {}, Axes p2 = {}, Axes p3 = {}) {
    Op op;
    op.kind = kind;
    op.args = std::move(args);
    op.p1 = std::move(p1);
    op.p2 = std::move(p2);
    op.p3 = std::move(p3);
    op.outs = {std::move(out)};
    return push(c, std::move(op));
  }
  int reshape(Ctx& c, int v, const Shape& s) {
    return shape_of(c, v) == s ? v : simple(c, OpKind::reshape, {v}, s, s);
  }

  // A value of shape s made from v by reshape, slice, concatenate or broadcast.
  int coerce(Ctx& c, int v, const Shape& s) {
    Shape from = shape_of(c, v);
    if (from == s) return v;
    int64_t n = elements(from), m = elements(s);
    if (n == m) return reshape(c, v, s);
    if (n == 1 && chance(50)) {
      int scalar = reshape(c, v, {});
      Axes none;
      return simple(c, OpKind::broadcast, {scalar}, s, s, none);
    }
    int flat = reshape(c, v, {n});
    if (n < m) {  // repeat it, then cut
      std::vector<int> parts(static_cast<size_t>((m + n - 1) / n), flat);
      flat = parts.size() == 1 ? flat : simple(c, OpKind::concatenate, parts, {n * static_cast<int64_t>(parts.size())}, {0});
      n *= static_cast<int64_t>(parts.size());
    }
    if (n > m) {
      int64_t start = pick(static_cast<int>(n - m + 1));
      flat = simple(c, OpKind::slice, {flat}, {m}, {start}, {start + m}, {1});
    }
    return reshape(c, flat, s);
  }
  // An operand of rank >= 1.
  int nonscalar(Ctx& c) {
    int v = operand(c);
    return shape_of(c, v).empty() ? coerce(c, v, {dim()}) : v;
  }

  // A random factorisation of n into a shape of rank <= 3.
  Shape factor(int64_t n) {
    std::vector<int64_t> primes;
    for (int64_t p = 2; n > 1; ++p)
      while (n % p == 0) primes.push_back(p), n /= p;
    Shape s(static_cast<size_t>(1 + pick(3)), 1);
    for (int64_t p : primes) s[static_cast<size_t>(pick(static_cast<int>(s.size())))] *= p;
    if (primes.empty() && chance(30)) s.clear();
    return s;
  }

  void random_op(Ctx& c, int size) {
    int kind = pick(c.depth < kMaxDepth ? 17 : 15);
    switch (kind) {
      case 0: case 1: {  // unary, the most common
        int a = operand(c);
        Op op;
        op.kind = OpKind::unary;
        op.code = pick(12);
        op.args = {a};
        op.outs = {shape_of(c, a)};
        push(c, std::move(op));
        return;
      }
      case 2: case 3: {  // binary: same shape, a scalar, a trailing vector, or a number
        int a = operand(c);
        Shape s = shape_of(c, a);
        Op op;
        op.kind = OpKind::binary;
        op.code = pick(8);
        int mode = pick(4);
        if (mode == 0) op.args = {a, coerce(c, operand(c), s)};
        if (mode == 1) op.args = {a, coerce(c, operand(c), {})};
        if (mode == 2) op.args = {a, s.empty() ? coerce(c, operand(c), {}) : coerce(c, operand(c), {s.back()})};
        if (mode == 3) {  // the number, and which side it is on
          op.args = {a};
          op.p1 = {pick(4), pick(2)};
        }
        if (chance(50) && op.args.size() == 2) std::swap(op.args[0], op.args[1]);
        op.outs = {s};
        push(c, std::move(op));
        return;
      }
      case 4: {  // dot_general: one contraction, at most one batch dimension
        int a = nonscalar(c);
        Shape sa = shape_of(c, a);
        Op op;
        op.kind = OpKind::dot;
        if (sa.size() == 3 && chance(60)) {
          int64_t n = dim();
          int b = coerce(c, operand(c), {sa[0], sa[2], n});
          op.args = {a, b};
          op.p1 = {2, 1, 0, 0};
          op.outs = {{sa[0], sa[1], n}};
        } else {
          int64_t ca = pick(static_cast<int>(sa.size()));
          Shape sb{sa[static_cast<size_t>(ca)]};
          int64_t cb = 0;
          if (chance(70)) {
            cb = pick(2);
            sb.insert(sb.begin() + (cb == 0 ? 1 : 0), dim());
          }
          if (sa.size() == 3 && sb.size() == 2) {  // keep the result at rank <= 3
            sb = {sb[static_cast<size_t>(cb)]};
            cb = 0;
          }
          int b = coerce(c, operand(c), sb);
          op.args = {a, b};
          op.p1 = {ca, cb, -1, -1};
          Shape out;
          for (size_t i = 0; i < sa.size(); ++i)
            if (static_cast<int64_t>(i) != ca) out.push_back(sa[i]);
          for (size_t i = 0; i < sb.size(); ++i)
            if (static_cast<int64_t>(i) != cb) out.push_back(sb[i]);
          op.outs = {out};
        }
        push(c, std::move(op));
        return;
      }
      case 5: {  // sum, mean or max over some axes
        int a = nonscalar(c);
        Shape s = shape_of(c, a), out;
        Axes axes;
        for (size_t i = 0; i < s.size(); ++i) (chance(50) ? axes.push_back(static_cast<int64_t>(i)) : out.push_back(s[i]));
        if (axes.empty()) axes.push_back(static_cast<int64_t>(s.size()) - 1), out.pop_back();
        Op op;
        op.kind = OpKind::reduce;
        op.code = pick(3);
        op.args = {a};
        op.p1 = axes;
        op.outs = {out};
        push(c, std::move(op));
        return;
      }
      case 6: {
        int a = operand(c);
        Shape s = factor(elements(shape_of(c, a)));
        simple(c, OpKind::reshape, {a}, s, s);
        return;
      }
      case 7: {
        int a = operand(c);
        Shape s = shape_of(c, a);
        if (s.size() < 2) return random_op(c, size);
        Axes perm(s.size());
        std::iota(perm.begin(), perm.end(), 0);
        for (size_t i = perm.size() - 1; i > 0; --i) std::swap(perm[i], perm[static_cast<size_t>(pick(static_cast<int>(i) + 1))]);
        Shape out;
        for (int64_t p : perm) out.push_back(s[static_cast<size_t>(p)]);
        simple(c, OpKind::transpose, {a}, out, perm);
        return;
      }
      case 8: {  // broadcast_in_dim: a new axis, and size-1 axes stretched
        int a = operand(c);
        Shape s = shape_of(c, a);
        if (s.size() >= 3) return random_op(c, size);
        size_t at = static_cast<size_t>(pick(static_cast<int>(s.size()) + 1));
        Shape out;
        Axes dims;
        for (size_t i = 0; i <= s.size(); ++i) {
          if (i == at) out.push_back(dim());
          if (i < s.size()) {
            dims.push_back(static_cast<int64_t>(out.size()));
            out.push_back(s[i] == 1 && chance(50) ? dim() : s[i]);
          }
        }
        if (elements(out) > kMaxElements) return random_op(c, size);
        simple(c, OpKind::broadcast, {a}, out, out, dims);
        return;
      }
      case 9: {  // slice with strides
        int a = nonscalar(c);
        Shape s = shape_of(c, a), out;
        Axes start, limit, strides;
        for (int64_t d : s) {
          int64_t b = pick(static_cast<int>(d)), e = b + 1 + pick(static_cast<int>(d - b)), st = 1 + pick(2);
          start.push_back(b), limit.push_back(e), strides.push_back(st);
          out.push_back((e - b + st - 1) / st);
        }
        simple(c, OpKind::slice, {a}, out, start, limit, strides);
        return;
      }
      case 10: case 11: {  // dynamic_slice / dynamic_update_slice; starts may be out of range (clamped)
        int a = nonscalar(c);
        Shape s = shape_of(c, a), sizes;
        Axes starts;
        for (int64_t d : s) sizes.push_back(1 + pick(static_cast<int>(d))), starts.push_back(pick(static_cast<int>(d) + 2) - 1);
        if (kind == 10) {
          simple(c, OpKind::dynamic_slice, {a}, sizes, starts, sizes);
        } else {
          int u = coerce(c, operand(c), sizes);
          simple(c, OpKind::dynamic_update_slice, {a, u}, s, starts);
        }
        return;
      }
      case 12: {
        int a = nonscalar(c);
        Shape s = shape_of(c, a);
        int64_t axis = pick(static_cast<int>(s.size()));
        std::vector<int> parts{a};
        Shape out = s;
        for (int i = 0, n = 1 + pick(2); i < n; ++i) {
          Shape p = s;
          p[static_cast<size_t>(axis)] = dim();
          out[static_cast<size_t>(axis)] += p[static_cast<size_t>(axis)];
          if (elements(out) > kMaxElements) break;
          parts.push_back(coerce(c, operand(c), p));
        }
        if (parts.size() == 1) return random_op(c, size);
        out = s;
        out[static_cast<size_t>(axis)] = 0;
        for (int p : parts) out[static_cast<size_t>(axis)] += shape_of(c, p)[static_cast<size_t>(axis)];
        if (chance(50)) std::swap(parts[0], parts.back());
        simple(c, OpKind::concatenate, parts, out, {axis});
        return;
      }
      case 13: {
        int a = operand(c);
        Op op;
        op.kind = OpKind::host_round_trip;
        op.code = pick(2);
        op.args = {a};
        op.outs = {shape_of(c, a)};
        push(c, std::move(op));
        return;
      }
      case 14: {
        int a = operand(c);
        Op op;
        op.kind = OpKind::name;
        op.name = kNames[pick(4)];
        op.args = {a};
        op.outs = {shape_of(c, a)};
        push(c, std::move(op));
        return;
      }
      case 15: {  // checkpoint of a nested block
        Op op;
        op.kind = OpKind::checkpoint;
        std::vector<Shape> in;
        for (int i = 0, n = 1 + pick(3); i < n; ++i) {
          op.args.push_back(operand(c));
          in.push_back(shape_of(c, op.args.back()));
        }
        op.policy = policy();
        int body_size = 1 + pick(std::max(1, size / 2)), outputs = 1 + pick(2);
        op.body = std::make_shared<Block>(block(in, c.shapes, body_size, c.depth + 1, {}, outputs));
        for (int o : op.body->outputs) op.outs.push_back(op.body->value_shapes()[static_cast<size_t>(o)]);
        push(c, std::move(op));
        return;
      }
      case 16: {  // scan: 1-2 carries, 0-2 scanned inputs, 0-1 stacked outputs
        Op op;
        op.kind = OpKind::scan;
        std::vector<Shape> carries, slices;
        for (int i = 0, n = 1 + pick(2); i < n; ++i) {
          op.args.push_back(operand(c));
          carries.push_back(shape_of(c, op.args.back()));
        }
        op.carries = static_cast<int>(carries.size());
        int xs = pick(3);
        op.length = xs ? 0 : 1 + pick(3);
        for (int i = 0; i < xs; ++i) {
          int x = i == 0 ? nonscalar(c) : operand(c);
          Shape s = shape_of(c, x);
          if (i == 0) op.length = s[0] <= 6 ? s[0] : dim();  // short loops keep programs small
          Shape slice = i == 0 ? Shape(s.begin() + 1, s.end()) : shape(2);
          Shape stacked = slice;
          stacked.insert(stacked.begin(), op.length);
          op.args.push_back(coerce(c, x, stacked));
          slices.push_back(slice);
        }
        op.reverse = chance(30);
        std::vector<Shape> in = carries;
        in.insert(in.end(), slices.begin(), slices.end());
        int body_size = 1 + pick(std::max(1, size / 2)), ys = pick(2);
        op.body = std::make_shared<Block>(block(in, c.shapes, body_size, c.depth + 1, carries, ys));
        std::vector<Shape> body_shapes = op.body->value_shapes();
        for (size_t i = 0; i < op.body->outputs.size(); ++i) {
          Shape s = body_shapes[static_cast<size_t>(op.body->outputs[i])];
          if (i >= carries.size()) s.insert(s.begin(), op.length);
          op.outs.push_back(s);
        }
        push(c, std::move(op));
        return;
      }
    }
  }

  std::mt19937 rng_;
};

// ---- emission ----

Tensor unary(int code, const Tensor& x) {
  switch (code) {
    case 0: return sin(x);
    case 1: return cos(x);
    case 2: return tanh(x);
    case 3: return logistic(x);
    case 4: return -x;
    case 5: return exp(tanh(x));          // bounded
    case 6: return log(x * x + 1.0);      // safe domains from here on
    case 7: return sqrt(x * x + 1.0);
    case 8: return rsqrt(x * x + 1.0);
    case 9: return abs(x);
    case 10: return convert(convert(x, DType::f32), DType::f64);
    default: return pow(x * x + 1.0, 0.5);
  }
}

Tensor binary(int code, const Tensor& a, const Tensor& b) {
  switch (code) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * tanh(b);  // no op grows a value by more than a constant factor
    case 3: return a / (b * b + 1.0);
    case 4: return max(a, b);
    case 5: return min(a, b);
    case 6: return where(a > b, a, b * 0.5);
    default: return pow(a * a + 1.0, 0.5 * tanh(b));
  }
}

Tensor binary_number(int code, const Tensor& a, double k, bool left) {
  switch (code) {
    case 0: return left ? k + a : a + k;
    case 1: return left ? k - a : a - k;
    case 2: return left ? k * a : a * k;
    case 3: return left ? k / (a * a + 1.0) : a / k;
    case 4: return max(a, k);
    case 5: return min(k, a);
    case 6: return where(a > k, a, k);
    default: return left ? pow(k, tanh(a)) : pow(a * a + 1.0, 0.25 * k);
  }
}

std::vector<Tensor> emit_block(const Block& b, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outer,
                               bool checkpoints);

void emit_op(const Op& op, std::vector<Tensor>& v, bool checkpoints) {
  auto arg = [&](size_t i) { return v.at(static_cast<size_t>(op.args.at(i))); };
  auto starts = [&] {
    std::vector<Tensor> s;
    for (int64_t x : op.p1) s.push_back(constant(static_cast<double>(x), {}, DType::i32));
    return s;
  };
  switch (op.kind) {
    case OpKind::unary: v.push_back(unary(op.code, arg(0))); return;
    case OpKind::binary:
      if (op.args.size() == 1) v.push_back(binary_number(op.code, arg(0), 0.5 + 0.25 * static_cast<double>(op.p1[0]), op.p1[1]));
      else v.push_back(binary(op.code, arg(0), arg(1)));
      return;
    case OpKind::dot: {
      DotDims d{{op.p1[0]}, {op.p1[1]}, {}, {}};
      if (op.p1[2] >= 0) d.lhs_batch = {op.p1[2]}, d.rhs_batch = {op.p1[3]};
      double k = static_cast<double>(v.at(static_cast<size_t>(op.args[0])).shape()[static_cast<size_t>(op.p1[0])]);
      v.push_back(dot_general(arg(0), tanh(arg(1)), d) * (1.0 / k));
      return;
    }
    case OpKind::reduce:
      v.push_back(op.code == 0 ? sum(arg(0), op.p1) : op.code == 1 ? mean(arg(0), op.p1) : reduce_max(arg(0), op.p1));
      return;
    case OpKind::reshape: v.push_back(reshape(arg(0), op.p1)); return;
    case OpKind::transpose: v.push_back(transpose(arg(0), op.p1)); return;
    case OpKind::broadcast: v.push_back(broadcast_in_dim(arg(0), op.p1, op.p2)); return;
    case OpKind::slice: v.push_back(slice(arg(0), op.p1, op.p2, op.p3)); return;
    case OpKind::dynamic_slice: v.push_back(dynamic_slice(arg(0), starts(), op.p2)); return;
    case OpKind::dynamic_update_slice: v.push_back(dynamic_update_slice(arg(0), arg(1), starts())); return;
    case OpKind::concatenate: {
      std::vector<Tensor> parts;
      for (size_t i = 0; i < op.args.size(); ++i) parts.push_back(arg(i));
      v.push_back(concatenate(parts, op.p1[0]));
      return;
    }
    case OpKind::host_round_trip:
      v.push_back(device_put(device_put(arg(0), op.code ? MemoryKind::unpinned_host : MemoryKind::pinned_host),
                             MemoryKind::device));
      return;
    case OpKind::name: v.push_back(checkpoint_name(arg(0), op.name)); return;
    case OpKind::checkpoint: {
      std::vector<Tensor> args;
      for (size_t i = 0; i < op.args.size(); ++i) args.push_back(arg(i));
      std::shared_ptr<Block> body = op.body;
      std::vector<Tensor> outer = v;
      auto fn = [body, outer, checkpoints](std::vector<Tensor> xs) { return emit_block(*body, xs, outer, checkpoints); };
      std::vector<Tensor> outs = checkpoints ? checkpoint(fn, make_policy(op.policy))(args) : fn(args);
      v.insert(v.end(), outs.begin(), outs.end());
      return;
    }
    case OpKind::scan: {
      std::vector<Tensor> init, xs;
      for (size_t i = 0; i < op.args.size(); ++i) (static_cast<int>(i) < op.carries ? init : xs).push_back(arg(i));
      std::shared_ptr<Block> body = op.body;
      std::vector<Tensor> outer = v;
      size_t k = static_cast<size_t>(op.carries);
      auto step = [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
        std::vector<Tensor> in = c;
        in.insert(in.end(), x.begin(), x.end());
        std::vector<Tensor> out = emit_block(*body, in, outer, checkpoints);
        return std::pair{std::vector<Tensor>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k)),
                         std::vector<Tensor>(out.begin() + static_cast<std::ptrdiff_t>(k), out.end())};
      };
      auto r = scan(step, init, xs, xs.empty() ? op.length : -1, op.reverse);
      v.insert(v.end(), r.carry.begin(), r.carry.end());
      v.insert(v.end(), r.ys.begin(), r.ys.end());
      return;
    }
  }
}

std::vector<Tensor> emit_block(const Block& b, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outer,
                               bool checkpoints) {
  std::vector<Tensor> v = inputs;
  for (int c : b.captures) v.push_back(outer.at(static_cast<size_t>(c)));
  for (const Op& op : b.ops) emit_op(op, v, checkpoints);
  std::vector<Tensor> out;
  for (int o : b.outputs) out.push_back(v.at(static_cast<size_t>(o)));
  return out;
}

uint32_t mix(uint32_t h, uint32_t x) { return (h ^ x) * 16777619u; }  // FNV-1a step

// ---- listing ----

const char* const kOpNames[] = {"unary", "binary", "dot_general", "reduce", "reshape", "transpose", "broadcast_in_dim",
                                "slice", "dynamic_slice", "dynamic_update_slice", "concatenate", "host_round_trip",
                                "checkpoint_name", "checkpoint", "scan"};

std::string axes_text(const Axes& a) { return shape_text(a); }

void list_block(const Block& b, const std::string& indent, std::ostringstream& os) {
  std::vector<Shape> shapes = b.value_shapes();
  size_t v = 0;
  os << indent << "inputs:";
  for (; v < b.inputs.size(); ++v) os << " %" << v << shape_text(shapes[v]);
  os << "\n";
  for (int c : b.captures) os << indent << "%" << v << shape_text(shapes[v]) << " = captured outer %" << c << "\n", ++v;
  for (const Op& op : b.ops) {
    os << indent;
    for (size_t i = 0; i < op.outs.size(); ++i) os << (i ? ", " : "") << "%" << v + i << shape_text(op.outs[i]);
    v += op.outs.size();
    os << " = " << kOpNames[static_cast<int>(op.kind)];
    if (op.kind == OpKind::unary || op.kind == OpKind::binary || op.kind == OpKind::reduce ||
        op.kind == OpKind::host_round_trip)
      os << "#" << op.code;
    for (size_t i = 0; i < op.args.size(); ++i) os << (i ? ", %" : " %") << op.args[i];
    for (const Axes* p : {&op.p1, &op.p2, &op.p3})
      if (!p->empty()) os << " " << axes_text(*p);
    if (!op.name.empty()) os << " '" << op.name << "'";
    if (op.kind == OpKind::checkpoint) os << " policy " << describe(op.policy);
    if (op.kind == OpKind::scan)
      os << " carries " << op.carries << " length " << op.length << (op.reverse ? " reverse" : "");
    os << "\n";
    if (op.body) list_block(*op.body, indent + "    ", os);
  }
  os << indent << "outputs:";
  for (int o : b.outputs) os << " %" << o;
  os << "\n";
}

}  // namespace

std::vector<Shape> Block::value_shapes() const {
  std::vector<Shape> s = inputs;
  s.insert(s.end(), capture_shapes.begin(), capture_shapes.end());
  for (const Op& op : ops) s.insert(s.end(), op.outs.begin(), op.outs.end());
  return s;
}

int Block::size() const {
  int n = 0;
  for (const Op& op : ops) n += 1 + (op.body ? op.body->size() : 0);
  return n;
}

RandomProgram generate_program(uint32_t seed, int size) {
  Generator g(seed);
  RandomProgram p;
  p.seed = seed;
  p.size = size;
  for (int i = 0, n = 1 + g.pick(3); i < n; ++i) p.arguments.push_back(g.shape());
  p.main = g.block(p.arguments, {}, size, 0, {}, 1 + g.pick(3));
  return p;
}

Tensor emit_loss(const RandomProgram& p, const std::vector<Tensor>& args, bool checkpoints) {
  std::vector<Tensor> outs = emit_block(p.main, args, {}, checkpoints);
  Tensor loss = sum(outs.at(0));
  for (size_t i = 1; i < outs.size(); ++i) loss = loss + sum(outs[i]);
  return loss;
}

Policy make_policy(const PolicySpec& s) {
  switch (s.kind) {
    case PolicySpec::everything: return policies::everything_saveable;
    case PolicySpec::nothing: return policies::nothing_saveable;
    case PolicySpec::automatic: return policies::automatic;
    case PolicySpec::dots: return policies::dots_saveable;
    case PolicySpec::dots_no_batch: return policies::dots_with_no_batch_dims_saveable;
    case PolicySpec::offload_dots: return policies::offload_dot_with_no_batch_dims(MemoryKind::device, s.dst);
    case PolicySpec::save_names: return policies::save_only_these_names(s.saved);
    case PolicySpec::save_all_but_names: return policies::save_any_names_but_these(s.saved);
    case PolicySpec::save_and_offload_names:
      return policies::save_and_offload_only_these_names(s.saved, s.offloaded, MemoryKind::device, s.dst);
    case PolicySpec::both: return policies::save_from_both_policies(make_policy(*s.a), make_policy(*s.b));
    case PolicySpec::custom: {
      // Saveable, Recompute or Offloadable by a hash of what the equation is: deterministic, so a
      // policy asked twice about one equation answers the same.
      uint32_t salt = s.salt;
      MemoryKind dst = s.dst;
      return Policy(
          [salt, dst](const Equation& e) -> Decision {
            uint32_t h = mix(2166136261u ^ salt, static_cast<uint32_t>(e.primitive()));
            for (char ch : e.name()) h = mix(h, static_cast<unsigned char>(ch));
            for (const ShapeDtype& t : e.output_types())
              for (int64_t d : t.shape) h = mix(h, static_cast<uint32_t>(d));
            // An offload starts where the value lives: values already in host memory are saved.
            bool on_device = true;
            for (const ShapeDtype& t : e.output_types()) on_device = on_device && t.kind == MemoryKind::device;
            switch (h % 3) {
              case 0: return Saveable{};
              case 1: return Recompute{};
              default: return on_device ? Decision{Offloadable{MemoryKind::device, dst}} : Decision{Saveable{}};
            }
          },
          "random_custom");
    }
  }
  return policies::nothing_saveable;
}

std::string describe(const PolicySpec& s) {
  auto names = [](const std::vector<std::string>& v) {
    std::string out = "{";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
    return out + "}";
  };
  std::string dst(memory_kind_name(s.dst));
  switch (s.kind) {
    case PolicySpec::everything: return "everything_saveable";
    case PolicySpec::nothing: return "nothing_saveable";
    case PolicySpec::automatic: return "automatic";
    case PolicySpec::dots: return "dots_saveable";
    case PolicySpec::dots_no_batch: return "dots_with_no_batch_dims_saveable";
    case PolicySpec::offload_dots: return "offload_dot_with_no_batch_dims(device," + dst + ")";
    case PolicySpec::save_names: return "save_only_these_names(" + names(s.saved) + ")";
    case PolicySpec::save_all_but_names: return "save_any_names_but_these(" + names(s.saved) + ")";
    case PolicySpec::save_and_offload_names:
      return "save_and_offload_only_these_names(" + names(s.saved) + "," + names(s.offloaded) + ",device," + dst + ")";
    case PolicySpec::both: return "save_from_both_policies(" + describe(*s.a) + "," + describe(*s.b) + ")";
    case PolicySpec::custom: return "custom(salt=" + std::to_string(s.salt) + ",offload to " + dst + ")";
  }
  return "?";
}

std::string describe(const RandomProgram& p) {
  std::ostringstream os;
  os << "random program seed " << p.seed << " size " << p.size << " (" << p.main.size() << " ops)\n";
  list_block(p.main, "  ", os);
  return os.str();
}

namespace {

Block with_policy(const Block& b, PolicySpec::Kind kind) {
  Block out = b;
  for (Op& op : out.ops) {
    if (op.kind == OpKind::checkpoint) op.policy = PolicySpec{.kind = kind};
    if (op.body) op.body = std::make_shared<Block>(with_policy(*op.body, kind));
  }
  return out;
}

}  // namespace

RandomProgram with_policy(const RandomProgram& p, PolicySpec::Kind kind) {
  RandomProgram out = p;
  out.main = with_policy(p.main, kind);
  return out;
}

bool has_checkpoint(const Block& b) {
  for (const Op& op : b.ops)
    if (op.kind == OpKind::checkpoint || (op.body && has_checkpoint(*op.body))) return true;
  return false;
}

}  // namespace ferry::property
