// Structured values: structs registered with FERRY_FIELDS and maps by name go into and come out of
// jit, grad, value_and_grad, vjp, scan and checkpoint, and compiled calls take and return them; the
// flat form stays. Wrong structures are INVALID_ARGUMENT naming where they differ.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
using fy::testing::error_of;

namespace {

template <class T> struct Layer {
  T w, b;
  FERRY_FIELDS(w, b)
};
template <class T> struct Net {
  std::vector<Layer<T>> layers;
  T scale;
  FERRY_FIELDS(layers, scale)
};

// A struct that is not a template: it holds Tensors only.
struct Pair {
  fy::Tensor a, b;
  FERRY_FIELDS(a, b)
};

fy::Array vec(std::vector<float> v) {
  fy::Shape s{static_cast<int64_t>(v.size())};
  return fy::Array::from(std::move(v), s);
}

fy::Tensor net_loss(const Net<fy::Tensor>& n, const fy::Tensor& x) {
  fy::Tensor h = x;
  for (const auto& l : n.layers) h = fy::tanh(h * l.w + l.b);
  return fy::sum(h * n.scale);
}

Net<fy::Array> small_net() {
  return {{{vec({0.5f, -1.f}), vec({0.1f, 0.2f})}, {vec({2.f, 0.3f}), vec({0.f, -0.5f})}}, fy::Array::scalar(1.5f)};
}

}  // namespace

TEST(Trees, StructsGoThroughJitAndGradAndComeBackTyped) {
  auto step = fy::jit([](Net<fy::Tensor> n, fy::Tensor x) { return fy::value_and_grad(net_loss)(n, x); });
  Net<fy::Array> net = small_net();
  fy::Array x = vec({1.f, 2.f});
  // The result has a struct in it: the call returns it typed.
  auto [loss, g] = step(net, x);
  static_assert(std::is_same_v<decltype(g), Net<fy::Array>>);
  ASSERT_EQ(g.layers.size(), 2u);
  // Against the same function on a flat parameter list, compiled the old way.
  auto flat = fy::jit([](std::vector<fy::Tensor> p, fy::Tensor x) {
    Net<fy::Tensor> n{{{p[0], p[1]}, {p[2], p[3]}}, p[4]};
    return fy::value_and_grad([&](std::vector<fy::Tensor> q) {
      return net_loss(Net<fy::Tensor>{{{q[0], q[1]}, {q[2], q[3]}}, q[4]}, x);
    })(p);
  });
  std::vector<fy::Array> p = fy::detail::flat(net);
  fy::Results r = flat.lower(p, x).compile()(p, x);
  EXPECT_TRUE(loss.equals(r[0]));
  std::vector<fy::Array> g_flat = fy::detail::flat(g);
  for (size_t i = 0; i < g_flat.size(); ++i) EXPECT_TRUE(g_flat[i].equals(r[1 + i])) << i;
}

TEST(Trees, CompiledTakesAndReturnsStructuresAndTheFlatFormStays) {
  auto f = fy::jit([](Net<fy::Tensor> n, std::map<std::string, fy::Tensor> extra) {
    std::map<std::string, fy::Tensor> out;
    for (const auto& [k, v] : extra) out[k + "_doubled"] = v * 2.0;
    return std::tuple{fy::grad(net_loss)(n, extra.at("x")), out};
  });
  Net<fy::Array> net = small_net();
  std::map<std::string, fy::Array> extra{{"x", vec({1.f, 2.f})}, {"y", vec({3.f})}};
  fy::Compiled c = f.lower(net, extra).compile();
  fy::Results results = c(net, extra);
  ASSERT_EQ(results.size(), 5u + 2u);  // flat: five gradients, then the map by key
  auto [g, doubled] = results.as<Net<fy::Array>, std::map<std::string, fy::Array>>();
  EXPECT_EQ(doubled.at("y_doubled").to_vector<float>(), (std::vector<float>{6.f}));
  EXPECT_TRUE(g.scale.equals(results[4]));
  EXPECT_TRUE(doubled.at("x_doubled").equals(results[5]));
  // Conversion by declaration, and the flat vector.
  std::tuple<Net<fy::Array>, std::map<std::string, fy::Array>> typed = c(net, extra);
  EXPECT_TRUE(std::get<0>(typed).layers[1].b.equals(g.layers[1].b));
  std::vector<fy::Array> flat = c(net, extra);
  EXPECT_EQ(flat.size(), 7u);
  EXPECT_EQ(fy::detail::tree_def(net).leaf_paths(),
            (std::vector<std::string>{"layers.0.w", "layers.0.b", "layers.1.w", "layers.1.b", "scale"}));
  // Run on ShapeDtype trees: the same program.
  Net<fy::ShapeDtype> spec = fy::detail::map_leaves<fy::ShapeDtype>(
      net, [](const fy::Array& a) { return fy::ShapeDtype{a.shape(), a.dtype()}; });
  EXPECT_EQ(f.lower(spec, extra).as_text(), f.lower(net, extra).as_text());
}

TEST(Trees, WrongStructuresAreErrorsThatSayWhere) {
  auto f = fy::jit([](std::map<std::string, fy::Tensor> m) { return m.at("a") + m.at("b"); });
  std::map<std::string, fy::Array> ab{{"a", vec({1.f})}, {"b", vec({2.f})}};
  fy::Compiled c = f.lower(ab).compile();
  // Same count and types, other keys: the flat call would silently mix them up.
  fy::Error keys = error_of([&] { c(std::map<std::string, fy::Array>{{"a", vec({1.f})}, {"c", vec({2.f})}}); });
  EXPECT_EQ(keys.code(), fy::ErrorCode::invalid_argument);
  EXPECT_NE(keys.message().find("map{a: *, b: *}"), std::string::npos) << keys.what();
  // Converting results to a structure they do not have.
  auto g = fy::jit([](Net<fy::Tensor> n) { return n; });
  fy::Results r = g.lower(small_net()).compile()(small_net());
  fy::Error other = error_of([&] { r.as<Layer<fy::Array>>(); });
  EXPECT_EQ(other.code(), fy::ErrorCode::invalid_argument);
  EXPECT_NE(other.message().find("fields w, b"), std::string::npos) << other.what();
  EXPECT_EQ(error_of([&] { r.as<fy::Array>(); }).code(), fy::ErrorCode::invalid_argument);
  // A map used where the function took a missing key is the function's own error.
  EXPECT_THROW(f(std::map<std::string, fy::Array>{{"a", vec({1.f})}}), std::exception);
}

TEST(Trees, VjpAndScanTakeStructures) {
  auto f = fy::jit([](Net<fy::Tensor> n, fy::Tensor x) {
    // vjp: the pullback returns cotangents shaped like the primals.
    auto [y, pullback] = fy::vjp([&](const Net<fy::Tensor>& m) { return net_loss(m, x); }, n);
    auto [ct] = pullback(fy::ones_like(y));
    return std::tuple{y, ct};
  });
  // scan over a struct of stacked xs: its fields are sliced along axis 0.
  auto scanned = fy::jit([](Layer<fy::Tensor> stacked, fy::Tensor x) {
    auto r = fy::scan([](fy::Tensor h, Layer<fy::Tensor> l) { return std::pair{fy::tanh(h * l.w + l.b), h}; }, x, stacked);
    return std::map<std::string, fy::Tensor>{{"carry", r.carry}, {"ys", r.ys}};
  });
  Layer<fy::Array> stacked{fy::Array::from(std::vector<float>{0.5f, -1.f, 2.f, 0.3f}, {2, 2}),
                           fy::Array::from(std::vector<float>{0.1f, 0.2f, 0.f, -0.5f}, {2, 2})};
  auto out = scanned(stacked, vec({1.f, 2.f}));
  static_assert(std::is_same_v<decltype(out), std::map<std::string, fy::Array>>);
  EXPECT_EQ(out.at("ys").shape(), (fy::Shape{2, 2}));
  // The same as the unrolled loop over the struct of layers.
  auto [loss, ct] = f(small_net(), vec({1.f, 2.f}));
  auto [loss2, g2] = fy::jit([](Net<fy::Tensor> n, fy::Tensor x) { return fy::value_and_grad(net_loss)(n, x); })(
      small_net(), vec({1.f, 2.f}));
  EXPECT_TRUE(loss.equals(loss2));
  EXPECT_TRUE(ct.layers[0].w.equals(g2.layers[0].w));
  EXPECT_TRUE(ct.scale.equals(g2.scale));
}

TEST(Trees, CheckpointOfAStructIsDifferentiable) {
  auto loss = [](Layer<fy::Tensor> l, fy::Tensor x) {
    auto body = fy::checkpoint([](Layer<fy::Tensor> m, fy::Tensor h) {
      return std::map<std::string, fy::Tensor>{{"out", fy::sin(h * m.w) + m.b}};
    });
    return fy::sum(body(l, x).at("out"));
  };
  auto g = fy::jit([&](Layer<fy::Tensor> l, fy::Tensor x) { return fy::grad(loss)(l, x); });
  auto grads = g(Layer<fy::Array>{vec({1.f, 2.f}), vec({0.f, 0.f})}, vec({0.5f, 0.25f}));
  // d/dw sum(sin(x w) + b) = x cos(x w); d/db = 1.
  EXPECT_NEAR(grads.w.to_vector<float>()[0], 0.5 * std::cos(0.5), 1e-6);
  EXPECT_NEAR(grads.w.to_vector<float>()[1], 0.25 * std::cos(0.5), 1e-6);
  EXPECT_EQ(grads.b.to_vector<float>(), (std::vector<float>{1.f, 1.f}));
}

TEST(Trees, NonTemplateStructsWorkInsideTraces) {
  auto f = fy::jit([](fy::Tensor x) {
    Pair p{x, x * 3.0};
    auto [value, g] = fy::value_and_grad([](Pair q) { return fy::sum(q.a * q.b); })(p);
    return std::pair{value, g.a + g.b};
  });
  fy::Results r = f(vec({1.f, 2.f}));
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{15.f}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{4.f, 8.f}));  // b + a
}

TEST(Trees, TreesSaveByPathAndLoadIntoTheirStructure) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ferry_tree_" + std::to_string(::getpid()) + ".safetensors")).string();
  Net<fy::Array> net = small_net();
  auto state = fy::optim::adamw_init(net);
  fy::NamedArrays all = fy::to_named(net, "params.");
  all.merge(fy::to_named(state, "opt."));
  fy::save(path, all);
  fy::NamedArrays file = fy::load(path);
  EXPECT_TRUE(file.count("params.layers.1.b"));
  EXPECT_TRUE(file.count("opt.mu.scale"));
  EXPECT_TRUE(file.count("opt.count"));
  Net<fy::Array> back = fy::from_named(file, net, "params.");
  EXPECT_TRUE(back.layers[1].w.equals(net.layers[1].w));
  // Straight to and from a file.
  fy::save(path, net);
  Net<fy::Array> again = fy::load(path, net);
  EXPECT_TRUE(again.scale.equals(net.scale));
  // A different shape than wanted, and a missing name, say which array.
  Net<fy::Array> wider = net;
  wider.layers[0].w = fy::ones({3});
  fy::Error shape = error_of([&] { fy::load(path, wider); });
  EXPECT_NE(shape.message().find("'layers.0.w' is f32[2] but f32[3] is wanted"), std::string::npos) << shape.what();
  fy::Error missing = error_of([&] { fy::from_named(file, net, "nothing."); });
  EXPECT_NE(missing.message().find("nothing.layers.0.w"), std::string::npos) << missing.what();
  std::filesystem::remove(path);
}

TEST(Trees, ScanCarriesAStructAndStacksAMap) {
  auto f = fy::jit([](Layer<fy::Tensor> init, fy::Tensor xs) {
    auto r = fy::scan(
        [](Layer<fy::Tensor> c, fy::Tensor x) {
          Layer<fy::Tensor> next{c.w + x, c.b * x};
          return std::pair{next, std::map<std::string, fy::Tensor>{{"w", next.w}, {"sum", fy::sum(next.b)}}};
        },
        init, xs);
    return std::pair{r.carry, r.ys};
  });
  auto [carry, ys] = f(Layer<fy::Array>{vec({0.f, 1.f}), vec({1.f, 1.f})},
                       fy::Array::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2}));
  EXPECT_EQ(carry.w.to_vector<float>(), (std::vector<float>{9.f, 13.f}));
  EXPECT_EQ(carry.b.to_vector<float>(), (std::vector<float>{15.f, 48.f}));
  EXPECT_EQ(ys.at("w").shape(), (fy::Shape{3, 2}));
  EXPECT_EQ(ys.at("sum").to_vector<float>(), (std::vector<float>{3.f, 11.f, 63.f}));
  // Differentiated, the gradient of the struct carry has its structure.
  auto g = fy::jit([](Layer<fy::Tensor> init, fy::Tensor xs) {
    return fy::grad([&](Layer<fy::Tensor> l) {
      auto r = fy::scan([](Layer<fy::Tensor> c, fy::Tensor x) { return std::pair{Layer<fy::Tensor>{c.w * x, c.b + x}, fy::Tensor{}}; },
                        l, xs);
      return fy::sum(r.carry.w) + fy::sum(r.carry.b);
    })(init);
  });
  Layer<fy::Array> grads = g(Layer<fy::Array>{vec({1.f, 1.f}), vec({0.f, 0.f})},
                             fy::Array::from(std::vector<float>{2, 3, 4, 5}, {2, 2}));
  EXPECT_EQ(grads.w.to_vector<float>(), (std::vector<float>{8.f, 15.f}));
  EXPECT_EQ(grads.b.to_vector<float>(), (std::vector<float>{1.f, 1.f}));
}

TEST(Trees, TransformationsOnArraysReturnStructures) {
  auto loss = [](std::map<std::string, fy::Tensor> p, fy::Tensor x) { return fy::sum(p.at("w") * x + p.at("b")); };
  std::map<std::string, fy::Array> p{{"w", vec({1.f, 2.f})}, {"b", vec({0.f, 0.f})}};
  std::map<std::string, fy::Array> g = fy::grad(loss)(p, vec({3.f, 4.f}));
  EXPECT_EQ(g.at("w").to_vector<float>(), (std::vector<float>{3.f, 4.f}));
  EXPECT_EQ(g.at("b").to_vector<float>(), (std::vector<float>{1.f, 1.f}));
  auto [value, g2] = fy::value_and_grad(loss)(p, vec({3.f, 4.f}));
  EXPECT_EQ(value.to_vector<float>(), (std::vector<float>{11.f}));
  EXPECT_TRUE(g2.at("w").equals(g.at("w")));
  auto twice = fy::checkpoint([](Layer<fy::Tensor> l) { return Layer<fy::Tensor>{l.w * 2.0, l.b * 2.0}; });
  Layer<fy::Array> doubled = twice(Layer<fy::Array>{vec({1.f}), vec({2.f})});
  EXPECT_EQ(doubled.b.to_vector<float>(), (std::vector<float>{4.f}));
}
