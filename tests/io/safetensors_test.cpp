// safetensors: every dtype ferry has round-trips through a file; a file written by Python's
// safetensors package (tests/io/data, made by bench/peers/safetensors_interop.py) loads to the values
// it recorded; and every kind of bad file is a ferry::Error that says what is wrong.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
using fy::testing::error_of;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ferry_io_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string data_path(const std::string& name) { return std::string(FERRY_TEST_DATA) + "/io/data/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

fy::NamedArrays every_dtype() {
  return {
      {"f32", fy::Array::from(std::vector<float>{1.5f, -2.25f, 3e-8f, 1e30f, -0.0f, 7.f}, {2, 3})},
      {"f64", fy::Array::from(std::vector<double>{3.141592653589793}, {})},
      {"f16", fy::Array::from(std::vector<fy::float16>{fy::float16(0.5f), fy::float16(-65504.f), fy::float16(1e-3f)}, {3})},
      {"bf16", fy::Array::from(std::vector<fy::bfloat16>{fy::bfloat16(1.f), fy::bfloat16(-3.5f)}, {1, 2})},
      {"i32", fy::Array::from(std::vector<int32_t>{-2147483647 - 1, 0, 2147483647, 42}, {2, 2})},
      {"bool", fy::Array::from(std::vector<bool>{true, false, true}, {3})},
      {"empty", fy::zeros({0, 4})},
  };
}

void expect_same(const fy::NamedArrays& got, const fy::NamedArrays& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, a] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(got.at(name).equals(a)) << name << ": " << got.at(name).to_string() << " vs " << a.to_string();
  }
}

// A file from its header text and data bytes.
std::string file_of(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

fy::Error bad_file(const std::string& bytes) {
  return error_of([&] { fy::from_safetensors(bytes); });
}

// The elements as doubles (exact for every dtype here), and the dtype's safetensors name.
std::vector<double> values_of(const fy::Array& a) {
  std::vector<double> values;
  switch (a.dtype()) {
    case fy::DType::f64: for (double v : a.to_vector<double>()) values.push_back(v); break;
    case fy::DType::i32: for (int32_t v : a.to_vector<int32_t>()) values.push_back(v); break;
    case fy::DType::boolean: for (bool v : a.to_vector<bool>()) values.push_back(v); break;
    default: for (float v : a.to_vector<float>()) values.push_back(v); break;
  }
  return values;
}

std::string safetensors_name(fy::DType t) {
  if (t == fy::DType::boolean) return "BOOL";
  std::string s(fy::dtype_name(t));
  for (char& ch : s) ch = static_cast<char>(std::toupper(ch));
  return s;
}

// Checks arrays against the {"tensors": {name: {dtype, shape, values}}} that safetensors_interop.py writes.
void expect_listed(const fy::NamedArrays& got, const nlohmann::json& want) {
  ASSERT_EQ(got.size(), want["tensors"].size());
  for (const auto& [name, w] : want["tensors"].items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(got.count(name));
    const fy::Array& a = got.at(name);
    EXPECT_EQ(safetensors_name(a.dtype()), w["dtype"].get<std::string>());
    EXPECT_EQ(a.shape(), w["shape"].get<fy::Shape>());
    EXPECT_EQ(values_of(a), w["values"].get<std::vector<double>>());
  }
}

}  // namespace

TEST(Safetensors, EveryDtypeRoundTripsThroughAFile) {
  const std::string path = temp_path("round_trip.safetensors");
  fy::NamedArrays arrays = every_dtype();
  fy::save(path, arrays, {{"step", "12"}, {"note", "ünïcode"}});
  expect_same(fy::load(path), arrays);
  EXPECT_EQ(fy::load_metadata(path), (fy::Metadata{{"step", "12"}, {"note", "ünïcode"}}));
  // The file is what to_safetensors makes, and reads back in memory too.
  std::string bytes = read_file(path);
  EXPECT_EQ(bytes, fy::to_safetensors(arrays, {{"step", "12"}, {"note", "ünïcode"}}));
  fy::Metadata metadata;
  expect_same(fy::from_safetensors(bytes, fy::MemoryKind::device, &metadata), arrays);
  EXPECT_EQ(metadata.at("step"), "12");
  // The header is padded to 8 bytes, and each tensor starts at a multiple of its element size.
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(info["data_offsets"][0].get<uint64_t>() % fy::dtype_size(arrays.at(name).dtype()), 0u) << name;
  }
  EXPECT_EQ(header["f16"]["dtype"], "F16");
  EXPECT_EQ(header["bool"]["dtype"], "BOOL");
  EXPECT_EQ(header["f32"]["shape"], nlohmann::json({2, 3}));
  std::filesystem::remove(path);
}

TEST(Safetensors, LoadsIntoTheRequestedMemoryKind) {
  const std::string path = temp_path("kind.safetensors");
  fy::save(path, {{"x", fy::ones({2})}});
  fy::Array x = fy::load(path, fy::MemoryKind::pinned_host).at("x");
  EXPECT_EQ(x.memory_kind(), fy::MemoryKind::pinned_host);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 1}));
  std::filesystem::remove(path);
}

TEST(Safetensors, SavingReplacesTheFileWholeAndLeavesNoTemporary) {
  const std::string dir = temp_path("replace_dir");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/ckpt.safetensors";
  fy::save(path, {{"a", fy::ones({100})}});
  fy::save(path, {{"b", fy::zeros({2})}});
  expect_same(fy::load(path), {{"b", fy::zeros({2})}});
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  std::filesystem::remove_all(dir);
}

// Issue 32: two threads saving one path while a third loads it. The temporary name was shared
// (path.tmp-<pid>), so saves failed to rename and the reader saw a 0-byte checkpoint. Every save
// succeeds now, and every load sees one whole checkpoint: all of one writer's values.
TEST(Safetensors, ConcurrentSavesToOnePathNeverTear) {
  const std::string dir = temp_path("concurrent_dir");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/ckpt.safetensors";
  fy::save(path, {{"w", fy::full({4096}, 0.0)}});
  std::atomic<int> writing{2}, failed_saves{0}, failed_loads{0}, torn{0}, loads{0};
  std::vector<std::string> errors;
  std::mutex mu;
  auto writer = [&](float value) {
    for (int i = 0; i < 150; ++i) {
      try {
        fy::save(path, {{"w", fy::full({4096}, value)}});
      } catch (const fy::Error& e) {
        ++failed_saves;
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back(e.what());
      }
    }
    --writing;
  };
  std::thread a(writer, 1.0f), b(writer, 2.0f);
  while (writing > 0) {
    try {
      std::vector<float> w = fy::load(path).at("w").to_vector<float>();
      ++loads;
      if (w.size() != 4096 || std::any_of(w.begin(), w.end(), [&](float v) { return v != w[0]; })) ++torn;
    } catch (const fy::Error& e) {
      ++failed_loads;
      std::lock_guard<std::mutex> lock(mu);
      errors.push_back(e.what());
    }
  }
  a.join();
  b.join();
  EXPECT_EQ(failed_saves, 0);
  EXPECT_EQ(failed_loads, 0);
  EXPECT_EQ(torn, 0);
  EXPECT_GT(loads, 0);
  for (size_t i = 0; i < errors.size() && i < 3; ++i) ADD_FAILURE() << errors[i];
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporary left
  std::filesystem::remove_all(dir);
}

// The temporary is made with mkstemp, which gives it mode 0600; the checkpoint gets the mode an
// ordinary new file would (0666 less the umask).
TEST(Safetensors, SavedFilesHaveTheModeOfAnOrdinaryNewFile) {
  const mode_t old_mask = ::umask(022);
  const std::string path = temp_path("mode.safetensors");
  fy::save(path, {{"a", fy::ones({1})}});
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ::umask(old_mask);
  std::filesystem::remove(path);
}

// A long job checks where it will save before it starts (ferry demo --save does).
TEST(Safetensors, CheckSavePathBeforeAnyWork) {
  fy::Error missing = error_of([] { fy::check_save_path("/nonexistent-folder-32/x.safetensors"); });
  EXPECT_EQ(missing.code(), fy::ErrorCode::invalid_argument);
  EXPECT_NE(missing.message().find("the folder /nonexistent-folder-32 does not exist"), std::string::npos)
      << missing.what();
  const std::string dir = temp_path("check_dir");
  std::filesystem::create_directories(dir);
  fy::Error folder = error_of([&] { fy::check_save_path(dir); });
  EXPECT_NE(folder.message().find("it is a folder"), std::string::npos) << folder.what();
  EXPECT_NE(error_of([] { fy::check_save_path(""); }).message().find("empty"), std::string::npos);
  fy::check_save_path(dir + "/ok.safetensors");  // writable: no error, and nothing left behind
  fy::check_save_path("relative-name.safetensors");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 0);
  EXPECT_FALSE(std::filesystem::exists("relative-name.safetensors"));
  std::filesystem::remove_all(dir);
}

// Issue 32: [2^62, 0] holds no bytes and passed the header check, then Array::allocate refused it
// with a message naming neither the tensor nor the file. The header check applies the size rule
// Array does (ir/limits.h), and load names both.
TEST(Safetensors, ShapesArraysCannotHaveAreRefusedByTheHeaderCheck) {
  const std::string path = temp_path("zero_size.safetensors");
  write_file(path, file_of("{\"huge\": {\"dtype\":\"F32\",\"shape\":[4611686018427387904,0],\"data_offsets\":[0,0]}}"));
  fy::Error e = error_of([&] { fy::load(path); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_NE(e.message().find("tensor 'huge'"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find(path), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("counting each zero-size dimension as 1"), std::string::npos) << e.what();
  std::filesystem::remove(path);
  // The largest zero-size shape Array takes loads.
  fy::NamedArrays ok = fy::from_safetensors(
      file_of("{\"z\": {\"dtype\":\"F32\",\"shape\":[1073741824,0,1073741824],\"data_offsets\":[0,0]}}"));
  EXPECT_EQ(ok.at("z").shape(), (fy::Shape{int64_t{1} << 30, 0, int64_t{1} << 30}));
}

// Issue 32: messages echo bounded pieces of a hostile header (a 1 MB name, a long array).
TEST(Safetensors, MessagesEchoBoundedPiecesOfTheHeader) {
  const std::string name(1 << 20, 'n');
  fy::Error long_name = bad_file(file_of("{\"" + name + "\": {\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"));
  EXPECT_LT(long_name.message().size(), 400u) << long_name.message().substr(0, 400);
  EXPECT_NE(long_name.message().find("unknown dtype"), std::string::npos);
  std::string offsets = "[0";
  for (int i = 0; i < 100000; ++i) offsets += ",4";
  fy::Error long_list = bad_file(file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":" + offsets + "]}}", "abcd"));
  EXPECT_LT(long_list.message().size(), 400u) << long_list.message().substr(0, 400);
  EXPECT_NE(long_list.message().find("data_offsets must be [begin, end]"), std::string::npos);
}

// tests/io/data/python_written.safetensors was written by Python's safetensors (the Rust reference
// implementation); python_written.json lists what it holds.
TEST(Safetensors, LoadsAFileWrittenByPythonSafetensors) {
  auto want = nlohmann::json::parse(read_file(data_path("python_written.json")));
  const std::string file = data_path("python_written.safetensors");
  expect_listed(fy::load(file), want);
  fy::Metadata metadata = fy::load_metadata(file);
  EXPECT_EQ(metadata.at("format"), "pt");
  EXPECT_EQ(metadata.at("written_by"), want["metadata"]["written_by"]);
}

TEST(Safetensors, BadFilesAreErrorsThatSayWhatIsWrong) {
  using C = fy::ErrorCode;
  struct Case {
    std::string bytes;
    C code;
    std::string says;
  };
  const std::string f32x2 = R"("dtype":"F32","shape":[2])";
  std::string huge(8, '\0');
  huge[5] = 1;  // 2^40 bytes of header
  std::string over_limit(8, '\0');
  over_limit[3] = 0x10;  // 268 MB, over the 100 MB limit, with a file that long it would still be refused
  const std::vector<Case> cases = {
      {"", C::invalid_argument, "fewer than the 8"},
      {"\x02\0\0", C::invalid_argument, "fewer than the 8"},
      {huge + "{}", C::invalid_argument, "over the limit"},
      {over_limit + "{}", C::invalid_argument, "over the limit"},
      {file_of("{}").substr(0, 8) + "{", C::invalid_argument, "truncated"},
      {file_of("[]"), C::invalid_argument, "does not start with '{'"},
      {file_of(" {}"), C::invalid_argument, "does not start with '{'"},
      {file_of("{\"a\":"), C::invalid_argument, "not valid JSON"},
      {file_of("{\"a\": 1}"), C::invalid_argument, "must be an object"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[1]}}", "abcd"), C::invalid_argument, "no \"data_offsets\""},
      {file_of("{\"a\": {\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"), C::invalid_argument, "dtype must be a string"},
      {file_of("{\"a\": {\"dtype\":\"F99\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"), C::invalid_argument, "unknown dtype 'F99'"},
      {file_of("{\"a\": {\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", "abcdefgh"), C::unimplemented, "dtype I64"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "abcd"), C::invalid_argument, "non-negative integer"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", "abcd"), C::invalid_argument, "non-negative integer"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,4]}}", "abcd"), C::invalid_argument, "shape must be an array"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", "abcd"), C::invalid_argument, "[begin, end]"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", "abcd"), C::invalid_argument, "end before"},
      {file_of("{\"a\": {" + f32x2 + ",\"data_offsets\":[0,4]}}", "abcd"), C::invalid_argument, "needs 8 bytes"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", "abcd"),
       C::invalid_argument, "too large"},
      {file_of("{\"a\": {" + f32x2 + ",\"data_offsets\":[0,8]}}", "abcd"), C::invalid_argument, "truncated"},
      {file_of("{\"a\": {" + f32x2 + ",\"data_offsets\":[0,8]}}", "abcdefghXY"), C::invalid_argument, "2 bytes longer"},
      {file_of("{\"a\": {" + f32x2 + ",\"data_offsets\":[8,16]}}", "abcdefghabcdefgh"), C::invalid_argument,
       "belong to no tensor"},
      {file_of("{\"a\": {" + f32x2 + ",\"data_offsets\":[0,8]}, \"b\": {" + f32x2 + ",\"data_offsets\":[4,12]}}",
               "abcdefghabcd"),
       C::invalid_argument, "overlap"},
      {file_of("{\"a\": {" + f32x2 + ",\"data_offsets\":[0,8]}, \"a\": {" + f32x2 + ",\"data_offsets\":[0,8]}}", "abcdefgh"),
       C::invalid_argument, "appears twice"},
      {file_of("{\"a\": {\"dtype\":\"F32\",\"shape\":[[1]],\"data_offsets\":[0,4]}}", "abcd"), C::invalid_argument, "nests deeper"},
      {file_of("{\"__metadata__\": {\"k\": 1}}"), C::invalid_argument, "must be a string"},
      {file_of("{\"__metadata__\": [\"k\"]}"), C::invalid_argument, "object of strings"},
      {file_of("{\"m\": {\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", std::string("\x01\x02", 2)),
       C::invalid_argument, "holds the byte 2"},
      {file_of(std::string("{\"a\xff\": {}}")), C::invalid_argument, "not valid JSON"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bytes.size() > 8 ? c.bytes.substr(8) : "(short file)");
    fy::Error e = bad_file(c.bytes);
    EXPECT_EQ(e.code(), c.code) << e.what();
    EXPECT_NE(e.message().find(c.says), std::string::npos) << e.what();
    EXPECT_EQ(e.message().rfind("safetensors: ", 0), 0u) << e.what();
  }
  // A header padded with trailing spaces (as the reference writer pads) is fine.
  EXPECT_EQ(fy::from_safetensors(file_of("{\"a\": {" + f32x2 + ",\"data_offsets\":[0,8]}}   ", std::string(8, '\0')))
                .at("a").to_vector<float>(),
            (std::vector<float>{0, 0}));
}

TEST(Safetensors, FileErrorsNameThePath) {
  fy::Error missing = error_of([] { fy::load("/nonexistent/dir/x.safetensors"); });
  EXPECT_EQ(missing.code(), fy::ErrorCode::invalid_argument);
  EXPECT_NE(missing.message().find("/nonexistent/dir/x.safetensors"), std::string::npos) << missing.what();
  fy::Error directory = error_of([] { fy::load(std::filesystem::temp_directory_path().string()); });
  EXPECT_NE(directory.message().find("not a regular file"), std::string::npos) << directory.what();
  fy::Error unwritable = error_of([] { fy::save("/nonexistent/dir/x.safetensors", {{"a", fy::ones({1})}}); });
  EXPECT_EQ(unwritable.code(), fy::ErrorCode::invalid_argument);
  const std::string path = temp_path("truncated.safetensors");
  std::string bytes = fy::to_safetensors({{"a", fy::ones({64})}});
  write_file(path, bytes.substr(0, bytes.size() - 1));
  fy::Error truncated = error_of([&] { fy::load(path); });
  EXPECT_NE(truncated.message().find("truncated"), std::string::npos) << truncated.what();
  EXPECT_NE(truncated.message().find(path), std::string::npos) << truncated.what();
  std::filesystem::remove(path);
}

TEST(Safetensors, SaveRefusesBadNamesAndDonatedArrays) {
  EXPECT_EQ(error_of([] { fy::to_safetensors({{"", fy::ones({1})}}); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(error_of([] { fy::to_safetensors({{"__metadata__", fy::ones({1})}}); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(error_of([] { fy::to_safetensors({{"a", fy::Array{}}}); }).code(), fy::ErrorCode::invalid_argument);
  auto f = fy::jit([](fy::Tensor x) { return x * 2.0; }, {.donate_argnums = {0}});
  fy::Array x = fy::ones({4});
  f.lower(x).compile()(x);
  const std::string path = temp_path("donated.safetensors");
  fy::Error e = error_of([&] { fy::save(path, {{"x", x}}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_NE(e.message().find("donated"), std::string::npos) << e.what();
  // Issue 32: the message names the operation and the array, not only its type.
  EXPECT_NE(e.message().find("save: array 'x' (f32[4]) was donated"), std::string::npos) << e.what();
  EXPECT_FALSE(std::filesystem::exists(path));
}

// Every prefix of a valid file, and thousands of random corruptions of one, load or fail with a
// ferry::Error (the fuzzer in fuzz/ does this at length).
TEST(Safetensors, TruncatedAndCorruptedFilesNeverCrash) {
  const std::string good = fy::to_safetensors(every_dtype(), {{"k", "v"}});
  for (size_t n = 0; n < good.size(); ++n) EXPECT_THROW(fy::from_safetensors(good.substr(0, n)), fy::Error) << n;
  std::mt19937 rng(17);
  int loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = good;
    for (int k = 0; k <= static_cast<int>(rng() % 3); ++k)
      bytes[rng() % std::min<size_t>(bytes.size(), 400)] = static_cast<char>(rng() % 256);
    try {
      fy::from_safetensors(bytes);
      ++loaded;
    } catch (const fy::Error& e) {
      EXPECT_NE(e.code(), fy::ErrorCode::internal) << e.what();
    }
  }
  EXPECT_LT(loaded, 3000);
}

// Driven by tests/io/interop.sh with Python's safetensors: ferry writes a file for Python to check,
// and reads the one Python wrote just now.
TEST(SafetensorsInterop, WritesAFileForPython) {
  const char* dir = std::getenv("FERRY_INTEROP_DIR");
  if (!dir) GTEST_SKIP() << "run by tests/io/interop.sh";
  fy::NamedArrays arrays = every_dtype();
  fy::Metadata metadata{{"written_by", "ferry"}};
  fy::save(std::string(dir) + "/ferry_written.safetensors", arrays, metadata);
  nlohmann::json j;
  j["metadata"] = metadata;
  for (const auto& [name, a] : arrays)
    j["tensors"][name] = {{"dtype", safetensors_name(a.dtype())}, {"shape", a.shape()}, {"values", values_of(a)}};
  std::ofstream(std::string(dir) + "/ferry_written.json") << j.dump(1);
}

TEST(SafetensorsInterop, ReadsTheFilePythonWrote) {
  const char* dir = std::getenv("FERRY_INTEROP_DIR");
  if (!dir) GTEST_SKIP() << "run by tests/io/interop.sh";
  auto want = nlohmann::json::parse(read_file(std::string(dir) + "/python_written.json"));
  expect_listed(fy::load(std::string(dir) + "/python_written.safetensors"), want);
}
