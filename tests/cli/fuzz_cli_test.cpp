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
#include "tests/cli/fuzz_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

constexpr int cases_per_kind = 100;

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

// Command-line overrides of a valid definition, one of them bad: a value out of range (in the
// type it is used in: 2^32 + 1 is not 1), not a number, a control character (a line break would
// store a definition that no longer parses), a '#' (a comment in a file), bytes that are not
// UTF-8, or a key given twice. Each is refused like the line of a file.
std::vector<std::string> malformed_overrides(std::mt19937_64& rng, std::string& what) {
  auto pick = [&](std::size_t count) { return static_cast<std::size_t>(rng() % count); };
  const std::string keys[] = {"inputs.n",
                              "inputs.batch",
                              "forward.T",
                              "inputs.seed",
                              "forward.eps",
                              "solver.cg_plain.max_iterations",
                              "measure.timing_repeats",
                              "solver.cg_plain.tolerance"};
  const std::string junk[] = {
      "-1",      "abc",         "2**31",    "1e999", "",    "(",   "1\n[run]\ndevices = cuda",
      "\x1b[2J", "4 # comment", "\xff\xfe", "3\t4",  "1\r", "\x7f"};
  const std::string huge_keys[] = {"inputs.n", "forward.T", "solver.cg_plain.max_iterations",
                                   "measure.timing_repeats"};
  const std::string huge[] = {"4294967297", "2147483648", "3567587328", "1000001",
                              "9223372036854775807"};
  std::vector<std::string> overrides;
  if (pick(2) == 0) overrides.push_back("inputs.seed=" + std::to_string(pick(100)));
  switch (pick(3)) {
    case 0: {
      const std::string& value = junk[pick(std::size(junk))];
      overrides.push_back(keys[pick(std::size(keys))] + "=" + value);
      what = "value '" + value + "'";
      break;
    }
    case 1:
      overrides.push_back(huge_keys[pick(std::size(huge_keys))] + "=" +
                          huge[pick(std::size(huge))]);
      what = "out of range: " + overrides.back();
      break;
    default: {
      const std::string& key = huge_keys[pick(2)];
      overrides.push_back(key + "=1");
      overrides.push_back(key + "=2");
      what = "key given twice: " + key;
    }
  }
  std::shuffle(overrides.begin(), overrides.end(), rng);
  return overrides;
}

TEST(Fuzz, MalformedOverrides) {
  auto rng = make_rng(1804);
  for (int k = 0; k < cases_per_kind; ++k) {
    const ScratchDir dir;
    write_text(dir.file("d.ini"),
               "[inputs]\nn = 3\nbatch = 2\nlogits = uniform(0, 4)\n[forward]\nT = 1, 2\n"
               "[solvers]\nuse = unrolled, cg_plain\n[run]\ndevices = cpu\n");
    std::string what;
    std::vector<std::string> args{"run", dir.file("d.ini")};
    for (const std::string& given : malformed_overrides(rng, what)) args.push_back(given);
    args.insert(args.end(), {"-o", dir.file("d.h5"), "--max-runs", "0"});
    check_case("case " + std::to_string(k) + ": " + what, dir, args);
  }
}

}  // namespace
}  // namespace sinkgrad::testing
