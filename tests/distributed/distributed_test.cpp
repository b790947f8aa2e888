// ferry/distributed.h. Distributed.* run under `mpirun -np 2` (CTest distributed.np2): each process
// joins, and the processes check with MPI itself that their indexes are 0..N-1, each once.
// NoLauncher.* run as a plain process (CTest distributed.no_launcher).
#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
#include <vector>

#include "ferry/ferry.h"

namespace fy = ferry;

TEST(Distributed, EveryProcessJoinsWithItsOwnIndex) {
  ASSERT_FALSE(fy::distributed::is_initialized());
  EXPECT_EQ(fy::distributed::process_index(), 0);
  EXPECT_EQ(fy::distributed::process_count(), 1);
  fy::distributed::initialize();
  ASSERT_TRUE(fy::distributed::is_initialized());
  const int count = fy::distributed::process_count();
  EXPECT_EQ(count, 2);  // the CTest entry starts two
  EXPECT_EQ(fy::distributed::axis_name(), "data");
  const int index = fy::distributed::process_index();
  std::vector<int> all(static_cast<size_t>(count), -1);
  ASSERT_EQ(MPI_Allgather(&index, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
  std::sort(all.begin(), all.end());
  for (int i = 0; i < count; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i);
  // A second call is refused, and changes nothing.
  try {
    fy::distributed::initialize("model");
    FAIL() << "a second initialize() was accepted";
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
    EXPECT_NE(e.message().find("already"), std::string::npos) << e.message();
  }
  EXPECT_EQ(fy::distributed::axis_name(), "data");
  EXPECT_EQ(fy::distributed::process_index(), index);
}

TEST(NoLauncher, InitializeSaysHowToLaunch) {
  try {
    fy::distributed::initialize();
    FAIL() << "initialize() without a launcher was accepted";
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
    EXPECT_NE(e.message().find("mpirun -np"), std::string::npos) << e.message();
  }
  EXPECT_FALSE(fy::distributed::is_initialized());
  EXPECT_EQ(fy::distributed::process_count(), 1);
  EXPECT_EQ(fy::distributed::process_index(), 0);
}

TEST(NoLauncher, AnEmptyAxisNameIsRefused) {
  try {
    fy::distributed::initialize("");
    FAIL() << "an empty axis name was accepted";
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  }
}
