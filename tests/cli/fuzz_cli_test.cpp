// Fuzz-style tests of the real binary: a few hundred generated malformed inputs (HDF5 files of
// random shapes, element types, attributes and layouts, logits as an external link or a virtual
// dataset that cycles or reads a missing file or dataset, truncated files, random bytes) and
// malformed study definitions, each run under a time limit. Every case must end with exit code
// 1 or 2 and a one-line message: no signal, no hang, no sanitizer report, no output or temporary
// file left behind, the inputs byte for byte as they were. The generator is seeded
// (SINKGRAD_TEST_SEED replays a failure; the case is named in the failure message).

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

constexpr int cases_per_kind = 100;
constexpr int time_limit_seconds = 30;

struct Outcome {
  int exit_code = -1;
  bool signalled = false;
  std::string err;
};

// Runs the tool under `timeout -s KILL`: a hang shows as a signal.
Outcome run_limited(const std::vector<std::string>& args, const ScratchDir& capture) {
  std::string command = "timeout -s KILL " + std::to_string(time_limit_seconds) + " " +
                        shell_quoted(SINKGRAD_CLI_PATH);
  for (const std::string& arg : args) command += " " + shell_quoted(arg);
  command +=
      " >" + shell_quoted(capture.file("stdout")) + " 2>" + shell_quoted(capture.file("stderr"));
  const int status = std::system(command.c_str());
  Outcome outcome;
  outcome.signalled = !WIFEXITED(status) || WEXITSTATUS(status) >= 124;
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  outcome.err = read_text(capture.file("stderr"));
  return outcome;
}

std::vector<std::string> sorted_entries(const ScratchDir& dir) {
  std::vector<std::string> names = dir.entries();
  std::sort(names.begin(), names.end());
  return names;
}

// Runs one case in `dir` (whose files are its inputs) and checks every promise.
void check_case(const std::string& name, const ScratchDir& dir,
                const std::vector<std::string>& args) {
  SCOPED_TRACE(name);
  const std::vector<std::string> before = sorted_entries(dir);
  std::vector<std::string> contents;
  for (const std::string& entry : before) contents.push_back(read_text(dir.file(entry)));
  const ScratchDir capture;
  const Outcome outcome = run_limited(args, capture);
  EXPECT_FALSE(outcome.signalled) << "crash or hang, exit " << outcome.exit_code << ": "
                                  << outcome.err;
  EXPECT_TRUE(outcome.exit_code == 1 || outcome.exit_code == 2)
      << "exit " << outcome.exit_code << ": " << outcome.err;
  EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  EXPECT_EQ(outcome.err.rfind("sinkgrad ", 0), 0u) << outcome.err;
  EXPECT_EQ(outcome.err.find("Sanitizer"), std::string::npos) << outcome.err;
  EXPECT_EQ(outcome.err.find("runtime error"), std::string::npos) << outcome.err;
  EXPECT_EQ(sorted_entries(dir), before) << "an output or temporary file was left behind";
  for (std::size_t k = 0; k < before.size(); ++k)
    EXPECT_EQ(read_text(dir.file(before[k])), contents[k]) << before[k] << " was changed";
}

// An element type sinkgrad does not accept.
hid_t integer_type(std::mt19937_64& rng) {
  const hid_t types[] = {H5T_NATIVE_INT8, H5T_NATIVE_UINT16, H5T_NATIVE_INT32, H5T_NATIVE_INT64};
  return types[rng() % 4];
}

// Writes a dataset of the given shape and type filled with random bytes, with random
// attributes on it.
void write_random_dataset(hid_t file, const char* name, const std::vector<hsize_t>& shape,
                          hid_t type, std::mt19937_64& rng) {
  const hid_t space = H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr);
  const hid_t dataset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t count = 1;
  for (hsize_t extent : shape) count *= extent;
  if (count < (1u << 16)) {
    std::vector<unsigned char> bytes(count * H5Tget_size(type));
    for (unsigned char& byte : bytes) byte = static_cast<unsigned char>(rng());
    H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
  }
  const int attributes = std::uniform_int_distribution<int>(0, 2)(rng);
  for (int a = 0; a < attributes; ++a) {
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const std::string attribute = "attr" + std::to_string(a);
    const hid_t handle =
        H5Acreate2(dataset, attribute.c_str(), H5T_NATIVE_DOUBLE, scalar, H5P_DEFAULT, H5P_DEFAULT);
    const double value = std::uniform_real_distribution<double>(-1e300, 1e300)(rng);
    H5Awrite(handle, H5T_NATIVE_DOUBLE, &value);
    H5Aclose(handle);
    H5Sclose(scalar);
  }
  H5Dclose(dataset);
  H5Sclose(space);
}

// One malformed `grad` input: every generated file has at least one defect.
void write_malformed_input(const std::string& path, std::mt19937_64& rng, std::string& what) {
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  const hsize_t B = static_cast<hsize_t>(pick(1, 4)), n = static_cast<hsize_t>(pick(1, 5));
  const int defect = pick(0, 9);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<hsize_t> logits{B, n, n}, grad{B, n, n};
  hid_t logits_type = pick(0, 1) ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
  hid_t grad_type = pick(0, 1) ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
  bool skip_grad = false;
  switch (defect) {
    case 0: {  // wrong rank
      const int rank = pick(0, 1) ? pick(1, 2) : pick(4, 5);
      (pick(0, 1) ? logits : grad).assign(static_cast<std::size_t>(rank), n);
      what = "rank " + std::to_string(rank);
      break;
    }
    case 1:  // not square
      logits = {B, n, n + static_cast<hsize_t>(pick(1, 3))};
      what = "not square";
      break;
    case 2:  // empty matrices
      logits = grad = {B, 0, 0};
      what = "n = 0";
      break;
    case 3:  // an element type other than float32 / float64
      (pick(0, 1) ? logits_type : grad_type) = integer_type(rng);
      what = "integer elements";
      break;
    case 4:  // shapes that differ
      grad = {B + static_cast<hsize_t>(pick(1, 3)), n, n};
      what = "shape mismatch";
      break;
    case 5:  // a dataset missing
      skip_grad = true;
      what = "missing grad_output";
      break;
    case 6:  // declared far larger than memory, never written
      logits = grad = {hsize_t(1) << pick(34, 40), n + 60, n + 60};
      what = "huge shape";
      break;
    case 8:    // logits an external link: to this file itself (a cycle), or to a missing file
    case 9: {  // a virtual dataset: of itself, of a missing file or of a missing dataset
      const char* files[] = {"in.h5", "nowhere.h5", defect == 8 ? "out.h5" : "."};
      const char* target = files[pick(0, 2)];
      const char* source = std::string(target) == "." ? "/missing" : "/logits";
      write_random_dataset(file, "grad_output", grad, grad_type, rng);
      const hid_t space = H5Screate_simple(3, logits.data(), nullptr);
      const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
      if (defect == 8) H5Lcreate_external(target, source, file, "logits", H5P_DEFAULT, H5P_DEFAULT);
      if (defect == 9 && H5Pset_virtual(create, space, target, source, space) >= 0)
        H5Dclose(
            H5Dcreate2(file, "logits", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, create, H5P_DEFAULT));
      H5Pclose(create);
      H5Sclose(space);
      H5Fclose(file);
      what = std::string(defect == 8 ? "external link" : "virtual dataset") + " to " + target;
      return;
    }
    default: {  // logits is a group, not a dataset
      H5Gclose(H5Gcreate2(file, "logits", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
      write_random_dataset(file, "grad_output", grad, grad_type, rng);
      H5Fclose(file);
      what = "logits is a group";
      return;
    }
  }
  write_random_dataset(file, "logits", logits, logits_type, rng);
  if (!skip_grad) write_random_dataset(file, "grad_output", grad, grad_type, rng);
  H5Fclose(file);
}

TEST(Fuzz, MalformedHdf5Inputs) {
  auto rng = make_rng(1801);
  const char* solvers[] = {"unrolled", "cg_plain", "cg_corrected", "direct"};
  for (int k = 0; k < cases_per_kind; ++k) {
    const ScratchDir dir;
    std::string what;
    write_malformed_input(dir.file("in.h5"), rng, what);
    const std::string solver = solvers[rng() % 4];
    check_case("case " + std::to_string(k) + ": " + what + ", " + solver, dir,
               {"grad", "-i", dir.file("in.h5"), "-o", dir.file("out.h5"), "-s", solver});
  }
}

TEST(Fuzz, TruncatedAndRandomFiles) {
  auto rng = make_rng(1802);
  const ScratchDir source;
  write_grad_input(source.file("good.h5"), uniform_batch<double>(rng, 3, 4, 0.0, 4.0),
                   normal_batch<double>(rng, 3, 4));
  const std::string good = read_text(source.file("good.h5"));
  for (int k = 0; k < cases_per_kind; ++k) {
    const ScratchDir dir;
    std::string bytes;
    std::string what;
    if (k % 3 != 2) {  // truncated: a prefix of a valid file
      bytes = good.substr(0, rng() % (good.size() - 1));
      what = "truncated to " + std::to_string(bytes.size());
    } else {  // random bytes, half of them behind the HDF5 signature
      bytes = k % 2 ? std::string("\x89HDF\r\n\x1a\n", 8) : "";
      const std::size_t size = rng() % 4096;
      for (std::size_t i = 0; i < size; ++i) bytes += static_cast<char>(rng());
      what = "random bytes";
    }
    write_text(dir.file("in.h5"), bytes);
    check_case("case " + std::to_string(k) + ": " + what, dir,
               {"grad", "-i", dir.file("in.h5"), "-o", dir.file("out.h5"), "-s", "unrolled"});
  }
}

// One malformed definition: a valid one with one defect.
std::string malformed_definition(std::mt19937_64& rng, std::string& what) {
  std::vector<std::string> lines{"[inputs]",  "n = 3",        "batch = 2", "logits = uniform(0, 4)",
                                 "[forward]", "T = 1, 2",     "[solvers]", "use = unrolled, direct",
                                 "[run]",     "devices = cpu"};
  auto pick = [&](std::size_t high) { return static_cast<std::size_t>(rng() % (high + 1)); };
  const std::string junk[] = {"-1",
                              "0",
                              "1e999",
                              "abc",
                              "",
                              "(",
                              ")",
                              "3.5",
                              "99999999999999999999",
                              "uniform(4, 0)",
                              "file(nowhere.h5, x)",
                              "all, all",
                              ",",
                              "\xff\xfe"};
  const std::size_t value_lines[] = {1, 2, 3, 5, 7, 9};
  switch (pick(6)) {
    case 0: {  // a bad value
      const std::size_t line = value_lines[pick(5)];
      const std::string value = junk[pick(13)];
      lines[line] = lines[line].substr(0, lines[line].find('=') + 2) + value;
      what = "value '" + value + "' in line " + std::to_string(line);
      break;
    }
    case 1:
      lines.insert(lines.begin() + static_cast<long>(pick(lines.size())), "nosuch = 1");
      what = "unknown key";
      break;
    case 2:
      lines.push_back("[nosuch]");
      lines.push_back("x = 1");
      what = "unknown section";
      break;
    case 3:
      lines.erase(lines.begin() + static_cast<long>(value_lines[pick(3)]));
      what = "a required key missing";
      break;
    case 4: {  // a random byte string inside a line
      std::string bytes;
      for (int i = 0; i < 4; ++i) bytes += static_cast<char>(0x80 | (rng() & 0x7f));
      lines[value_lines[pick(5)]] += bytes;
      what = "non-UTF-8 bytes";
      break;
    }
    case 5:
      lines[1] += std::string(1, '\0') + "x";
      what = "NUL byte";
      break;
    default:
      lines.insert(lines.begin() + 1, lines[1]);
      what = "a key given twice";
  }
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(Fuzz, MalformedDefinitions) {
  auto rng = make_rng(1803);
  for (int k = 0; k < cases_per_kind; ++k) {
    const ScratchDir dir;
    std::string what;
    const std::string text = malformed_definition(rng, what);
    write_text(dir.file("d.ini"), text);
    check_case("case " + std::to_string(k) + ": " + what, dir,
               {"run", dir.file("d.ini"), "-o", dir.file("d.h5"), "--max-runs", "0"});
  }
}

}  // namespace
}  // namespace sinkgrad::testing
