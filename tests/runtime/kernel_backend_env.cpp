// The kernel tests on a backend that cannot run here (FERRY_KERNEL_TEST_BACKEND=cuda on a machine
// without a GPU) skip, every one, saying why, instead of failing.
#include <gtest/gtest.h>

#include "runtime/backend.h"
#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

class KernelBackendEnvironment : public testing::Environment {
 public:
  void SetUp() override {
    const std::string name = kernel_backend_name();
    std::string why;
    if (!runtime::backend_available(name, &why))
      GTEST_SKIP() << "kernel tests on the " << name << " backend skipped: " << why;
  }
};

[[maybe_unused]] testing::Environment* const environment =
    testing::AddGlobalTestEnvironment(new KernelBackendEnvironment);

}  // namespace
}  // namespace ferry::kernel_test
