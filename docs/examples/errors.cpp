// The examples of docs/guide/errors.md ("Errors and reliability"): each error the page names, made
// on purpose, with its code and message. The page quotes the code between the checks and a message
// this program prints; docs.snippets checks both, docs.errors runs it.
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ferry/ferry.h>

namespace fy = ferry;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> messages;

// Runs `f`, which must fail with `code`, and keeps the message.
void expect_error(fy::ErrorCode code, const std::string& what, const std::function<void()>& f) {
  try {
    f();
    check(false, what + ": no error");
  } catch (const fy::Error& e) {
    messages.push_back(e.what());
    check(e.code() == code, what + ": " + std::string(fy::error_code_name(code)));
  }
}

// What a caller does with an error.
bool catching() {
  try {
    fy::jit([](fy::Tensor a, fy::Tensor b) { return a + b; }).lower(fy::ones({2, 3}), fy::ones({4}));
  } catch (const ferry::Error& e) {
    std::printf("%s\n", e.what());                          // the code, then what is wrong
    return e.code() == ferry::ErrorCode::invalid_argument;  // e.code(): which kind of error
  }
  return false;
}

// Spelled as in JAX: a reduction takes axes; an elementwise max with a number takes a
// floating-point literal or is spelled maximum.
template <class T> concept max_with_an_int = requires(T x) { fy::max(x, 1); };
static_assert(!max_with_an_int<fy::Tensor>, "fy::max(x, 1) does not compile");

void reductions_as_in_jax() {
  auto f = fy::jit([](fy::Tensor x) {
    fy::Tensor rows = fy::max(x, {1});       // reduces over axis 1, like jnp.max(x, 1)
    fy::Tensor relu = fy::max(x, 0.0);       // elementwise, like jnp.maximum(x, 0.0)
    fy::Tensor same = fy::maximum(x, 0);
    return std::tuple{rows, relu, same};
  });
  fy::Array x = fy::Array::from(std::vector<float>{-1, 2, 3, -4}, {2, 2});
  auto [rows, relu, same] = f(x).as<fy::Array, fy::Array, fy::Array>();
  check(rows.to_vector<float>() == std::vector<float>{2, 3} && relu.to_vector<float>() == std::vector<float>{0, 2, 3, 0} &&
            same.equals(relu),
        "max(x, {1}) reduces, max(x, 0.0) and maximum(x, 0) are elementwise");
}

void errors() {
  // Shapes that do not broadcast.
  expect_error(fy::ErrorCode::invalid_argument, "a shape error", [] {
    fy::jit([](fy::Tensor a, fy::Tensor b) { return a + b; }).lower(fy::ones({2, 3}), fy::ones({4}));
  });

  // A device limit the plan does not fit.
  expect_error(fy::ErrorCode::resource_exhausted, "a plan over the limit", [] {
    fy::jit([](fy::Tensor a) { return fy::sin(a) * fy::cos(a); }).lower(fy::ones({256, 256})).compile({.device_memory_limit = 4096});
  });

  // A custom policy that throws.
  expect_error(fy::ErrorCode::invalid_argument, "a policy that throws", [] {
    fy::Policy broken([](const fy::Equation&) -> fy::Decision { throw std::runtime_error("no idea"); }, "broken");
    auto f = [&](fy::Tensor x) { return fy::grad(fy::checkpoint([](fy::Tensor v) { return fy::sum(fy::sin(v)); }, broken))(x); };
    fy::jit(f).lower(fy::ones({4}));
  });

  // An Offloadable whose src is not where the value lives.
  expect_error(fy::ErrorCode::invalid_argument, "an offload from the wrong memory kind", [] {
    fy::Policy wrong([](const fy::Equation&) -> fy::Decision {
      return fy::Offloadable{fy::MemoryKind::pinned_host, fy::MemoryKind::unpinned_host};
    }, "wrong");
    auto f = [&](fy::Tensor x) { return fy::grad(fy::checkpoint([](fy::Tensor v) { return fy::sum(fy::sin(fy::sin(v))); }, wrong))(x); };
    fy::jit(f).lower(fy::ones({4}));
  });

  // Cost-model rates that are not positive and finite.
  expect_error(fy::ErrorCode::invalid_argument, "a bad rate", [] {
    fy::Rates rates;
    rates.compute_flops_per_s = -1;
    fy::jit([](fy::Tensor a) { return fy::sin(a); }).lower(fy::ones({4})).compile({.rates = rates});
  });

  // A donated array used again.
  expect_error(fy::ErrorCode::invalid_argument, "a donated array read again", [] {
    auto f = fy::jit([](fy::Tensor a) { return a * 2.0; }, {.donate_argnums = {0}});
    fy::Array a = fy::ones({4});
    f(a);
    a.to_vector<float>();
  });

  // Text that does not parse.
  expect_error(fy::ErrorCode::invalid_argument, "bad IR text", [] { fy::parse_program("program @main() {"); });
}

}  // namespace

int main() {
  check(catching(), "a shape error is INVALID_ARGUMENT");
  reductions_as_in_jax();
  errors();
  std::printf("the messages:\n");
  for (const std::string& m : messages) std::printf("%s\n", m.c_str());
  if (failures) std::printf("%d checks failed\n", failures);
  return failures ? 1 : 0;
}
