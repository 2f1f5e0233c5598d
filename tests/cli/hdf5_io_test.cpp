// The HDF5 layer (io): round trips of batches, vectors, N-D datasets, extendable
// datasets, groups and attributes; conversions; and the messages of every failure.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/hdf5.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/support/random_inputs.hpp"

namespace sinkgrad::testing {
namespace {

// Runs f, expecting a sinkgrad::Error whose message contains every part.
template <class F>
void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error was thrown";
  } catch (const Error& error) {
    const std::string message = error.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos)
          << "expected '" << part << "' in: " << message;
  }
}

TEST(Hdf5Io, BatchesRoundTripInBothPrecisionsAndConvert) {
  auto rng = make_rng(20);
  const ScratchDir dir;
  const HostBatch<double> M64 = normal_batch<double>(rng, 7, 5, 3.0);
  const HostBatch<float> M32 = normal_batch<float>(rng, 7, 5, 3.0);
  {
    const h5::File file = h5::File::create(dir.file("b.h5"));
    h5::write_batch<double>(file, "m64", M64.view());
    h5::write_batch<float>(file, "m32", M32.view());
  }
  const h5::File file = h5::File::open(dir.file("b.h5"));
  const h5::BatchInfo info = h5::inspect_batch(file, "m32");
  EXPECT_EQ(info.batch, 7);
  EXPECT_EQ(info.n, 5);
  EXPECT_EQ(info.precision, Precision::float32);
  EXPECT_EQ(h5::inspect_batch(file, "m64").precision, Precision::float64);

  const HostBatch<double> back64 = h5::read_batch<double>(file, "m64");
  const HostBatch<float> back32 = h5::read_batch<float>(file, "m32");
  const HostBatch<float> narrowed = h5::read_batch<float>(file, "m64");
  const HostBatch<double> widened = h5::read_batch<double>(file, "m32");
  ASSERT_EQ(back64.size(), M64.size());
  for (index_t k = 0; k < M64.size(); ++k) {
    EXPECT_EQ(back64.data()[k], M64.data()[k]);
    EXPECT_EQ(back32.data()[k], M32.data()[k]);
    EXPECT_EQ(narrowed.data()[k], static_cast<float>(M64.data()[k]));
    EXPECT_EQ(widened.data()[k], static_cast<double>(M32.data()[k]));
  }
}

TEST(Hdf5Io, NonFiniteValuesSurviveAndOverflowBecomesInfinity) {
  const ScratchDir dir;
  const std::vector<double> values{std::nan(""), std::numeric_limits<double>::infinity(), 1e300,
                                   -1e300};
  {
    const h5::File file = h5::File::create(dir.file("nan.h5"));
    h5::write_dataset<double>(file, "x", {1, 2, 2}, values.data());
  }
  const auto as_float = h5::read_batch<float>(h5::File::open(dir.file("nan.h5")), "x");
  EXPECT_TRUE(std::isnan(as_float.data()[0]));
  EXPECT_EQ(as_float.data()[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(as_float.data()[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(as_float.data()[3], -std::numeric_limits<float>::infinity());
}

TEST(Hdf5Io, VectorsAndMatricesOfEveryElementType) {
  const ScratchDir dir;
  const std::vector<std::int32_t> codes{0, 3, -7, 2147483647};
  const std::vector<std::int64_t> big{1, -2, std::int64_t(1) << 40};
  const std::vector<double> matrix{1, 2, 3, 4, 5, 6};
  {
    const h5::File file = h5::File::create(dir.file("v.h5"));
    h5::write_vector(file, "codes", codes);
    h5::write_vector(file, "big", big);
    h5::write_dataset<double>(file, "matrix", {2, 3}, matrix.data());
    h5::write_vector(file, "small64", std::vector<std::int64_t>{5, -6});
  }
  const h5::File file = h5::File::open(dir.file("v.h5"));
  EXPECT_EQ(h5::read_vector<std::int32_t>(file, "codes"), codes);
  EXPECT_EQ(h5::read_vector<std::int64_t>(file, "codes"),
            std::vector<std::int64_t>(codes.begin(), codes.end()));
  EXPECT_EQ(h5::read_vector<std::int64_t>(file, "big"), big);
  EXPECT_EQ(h5::read_vector<std::int32_t>(file, "small64"), (std::vector<std::int32_t>{5, -6}));
  const auto info = h5::Dataset::open(file, "matrix").info();
  EXPECT_EQ(info.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(info.type, h5::ElementType::float64);
  EXPECT_EQ(h5::Dataset::open(file, "matrix").read<double>(), matrix);

  expect_error([&] { h5::read_vector<std::int32_t>(file, "big"); },
               {"'/big'", "does not fit in int32"});
  expect_error([&] { h5::read_vector<double>(file, "matrix"); }, {"'/matrix'", "rank 2"});
  expect_error([&] { h5::Dataset::open(file, "matrix").read<std::int32_t>(); },
               {"'/matrix'", "holds float64", "int32 or int64"});
  expect_error([&] { h5::Dataset::open(file, "codes").read<double>(); },
               {"'/codes'", "holds int32", "float32 or float64"});
  expect_error([&] { h5::write_vector(file, "codes", codes); }, {"name is taken"});
}

TEST(Hdf5Io, ExtendableDatasetsGrowByRows) {
  const ScratchDir dir;
  {
    const h5::File file = h5::File::create(dir.file("log.h5"));
    const h5::Dataset history = h5::create_extendable_dataset<double>(file, "history", {3}, 2);
    const std::vector<double> first{1, 2, 3}, more{4, 5, 6, 7, 8, 9, 10, 11, 12};
    history.append(first.data(), 1);
    history.append(more.data(), 3);
    file.flush();
    expect_error([&] { history.append(std::vector<float>(3).data(), 1); },
                 {"cannot append float32", "float64"});
  }
  const auto dataset = h5::Dataset::open(h5::File::open(dir.file("log.h5")), "history");
  EXPECT_EQ(dataset.info().shape, (std::vector<std::size_t>{4, 3}));
  const auto values = dataset.read<double>();
  for (std::size_t k = 0; k < values.size(); ++k) EXPECT_EQ(values[k], double(k + 1));
}

TEST(Hdf5Io, GroupsNestListAndRemove) {
  const ScratchDir dir;
  {
    const h5::File file = h5::File::create(dir.file("g.h5"));
    const h5::Group run = file.create_group("runs/run_0001");
    EXPECT_EQ(run.path(), "/runs/run_0001");
    h5::write_vector(run, "status", std::vector<std::int32_t>{0, 1});
    file.require_group("runs").create_group("run_0002");
    expect_error([&] { file.create_group("runs"); }, {"'/runs'", "name is taken"});
  }
  {
    const h5::File file = h5::File::open(dir.file("g.h5"), h5::File::Mode::read_write);
    EXPECT_TRUE(file.has_group("runs"));
    EXPECT_TRUE(file.has("runs/run_0001/status"));
    EXPECT_TRUE(file.has_dataset("runs/run_0001/status"));
    EXPECT_FALSE(file.has("runs/run_0009/status"));
    EXPECT_FALSE(file.has_dataset("runs"));
    EXPECT_TRUE(file.open_group("runs").has("/runs/run_0001/status"));  // absolute path
    EXPECT_FALSE(file.open_group("runs").has("/run_0001"));
    EXPECT_FALSE(file.has("/"));
    EXPECT_FALSE(file.has(""));
    const h5::Group runs = file.open_group("runs");
    EXPECT_EQ(runs.children(), (std::vector<std::string>{"run_0001", "run_0002"}));
    runs.remove("run_0002");
    EXPECT_EQ(runs.children(), std::vector<std::string>{"run_0001"});
    expect_error([&] { file.open_group("nothing"); }, {"'/nothing'", "missing", "g.h5"});
    expect_error([&] { runs.open_group("run_0001/status"); }, {"is not a group"});
  }
  const h5::File file = h5::File::open(dir.file("g.h5"));
  EXPECT_EQ(h5::read_vector<std::int32_t>(file.open_group("runs/run_0001"), "status"),
            (std::vector<std::int32_t>{0, 1}));
  expect_error([&] { file.create_group("x"); }, {"'/x'", "g.h5"});  // read-only
}

TEST(Hdf5Io, AttributesOfEveryKindOnFilesGroupsAndDatasets) {
  const ScratchDir dir;
  {
    const h5::File file = h5::File::create(dir.file("a.h5"));
    h5::write_string_attribute(file, "solver", "cg_corrected");
    h5::write_string_attribute(file, "empty", "");
    h5::write_int_attribute(file, "T", 20);
    h5::write_double_attribute(file, "scale", 0.25);
    h5::write_int_array_attribute(file, "sizes", {4, 8, 16});
    h5::write_double_array_attribute(file, "tolerances", {1e-5, 1e-12});
    h5::write_string_attribute(file, "solver", "direct");  // replaces
    const h5::Group group = file.create_group("run");
    h5::write_int_attribute(group, "seed", -3);
    const h5::Dataset data = h5::write_vector(group, "x", std::vector<double>{1});
    h5::write_string_attribute(data, "units", "none");
  }
  const h5::File file = h5::File::open(dir.file("a.h5"));
  EXPECT_EQ(h5::read_string_attribute(file, "solver"), "direct");
  EXPECT_EQ(h5::read_string_attribute(file, "empty"), "");
  EXPECT_EQ(h5::read_int_attribute(file, "T"), 20);
  EXPECT_EQ(h5::read_double_attribute(file, "T"), 20.0);
  EXPECT_EQ(h5::read_double_attribute(file, "scale"), 0.25);
  EXPECT_EQ(h5::read_int_array_attribute(file, "sizes"), (std::vector<std::int64_t>{4, 8, 16}));
  EXPECT_EQ(h5::read_double_array_attribute(file, "tolerances"),
            (std::vector<double>{1e-5, 1e-12}));
  EXPECT_EQ(h5::attribute_names(file),
            (std::vector<std::string>{"T", "empty", "scale", "sizes", "solver", "tolerances"}));
  EXPECT_EQ(h5::read_int_attribute(file.open_group("run"), "seed"), -3);
  EXPECT_EQ(h5::read_string_attribute(h5::Dataset::open(file.open_group("run"), "x"), "units"),
            "none");
  EXPECT_FALSE(h5::has_attribute(file, "missing"));

  expect_error([&] { h5::read_string_attribute(file, "missing"); },
               {"attribute 'missing'", "a.h5", "is missing"});
  expect_error([&] { h5::read_int_attribute(file, "solver"); }, {"'solver'", "not an integer"});
  expect_error([&] { h5::read_string_attribute(file, "T"); }, {"'T'", "not a string"});
  expect_error([&] { h5::read_int_attribute(file, "scale"); }, {"'scale'", "not an integer"});
  expect_error([&] { h5::read_int_attribute(file, "sizes"); }, {"'sizes'", "3 values"});
}

TEST(Hdf5Io, FilesThatCannotBeOpenedOrCreated) {
  const ScratchDir dir;
  expect_error([&] { h5::File::open(dir.file("absent.h5")); }, {"absent.h5", "does not exist"});
  write_text(dir.file("notes.txt"), "not hdf5");
  expect_error([&] { h5::File::open(dir.file("notes.txt")); },
               {"notes.txt", "is not an HDF5 file"});
  expect_error([&] { h5::File::open(dir.file("")); }, {"directory"});
  expect_error([&] { h5::File::create(dir.file("notes.txt")); }, {"notes.txt", "already exists"});
  EXPECT_EQ(read_text(dir.file("notes.txt")), "not hdf5");
  expect_error([&] { h5::File::create(dir.file("no/dir/x.h5")); }, {"no/dir/x.h5"});
  // Replacing an existing file is allowed when asked for.
  h5::File::create(dir.file("notes.txt"), h5::File::Exists::replace);
  EXPECT_NO_THROW(h5::File::open(dir.file("notes.txt")));
}

TEST(Hdf5Io, BatchShapeAndTypeChecksNameFileAndDataset) {
  const ScratchDir dir;
  {
    const h5::File file = h5::File::create(dir.file("shapes.h5"));
    h5::write_dataset<double>(file, "flat", {4, 4}, std::vector<double>(16).data());
    h5::write_dataset<double>(file, "wide", {2, 2, 3}, std::vector<double>(12).data());
    h5::write_dataset<double>(file, "empty", {2, 0, 0}, nullptr);
    h5::write_dataset<std::int32_t>(file, "ints", {1, 2, 2}, std::vector<std::int32_t>(4).data());
    h5::write_dataset<double>(file, "four", {1, 1, 2, 2}, std::vector<double>(4).data());
  }
  const h5::File file = h5::File::open(dir.file("shapes.h5"));
  expect_error([&] { h5::inspect_batch(file, "flat"); },
               {"'/flat'", "shapes.h5", "rank 2", "(4, 4)", "(B, n, n)"});
  expect_error([&] { h5::inspect_batch(file, "four"); }, {"'/four'", "rank 4"});
  expect_error([&] { h5::inspect_batch(file, "wide"); }, {"'/wide'", "(2, 2, 3)", "not square"});
  expect_error([&] { h5::inspect_batch(file, "empty"); }, {"'/empty'", "n must be >= 1"});
  expect_error([&] { h5::read_batch<double>(file, "ints"); },
               {"'/ints'", "shapes.h5", "int32", "float32 or float64"});
  expect_error([&] { h5::read_batch<float>(file, "logits"); },
               {"'/logits'", "shapes.h5", "missing", "it holds: empty, flat, four, ints, wide"});
}

TEST(Hdf5Io, ReplaceOnCommitIsAllOrNothing) {
  const ScratchDir dir;
  const std::string target = dir.file("out.h5");
  write_text(target, "old");
  {
    ReplaceOnCommit output(target);
    write_text(output.temporary_path(), "new but unfinished");
    EXPECT_EQ(dir.entries().size(), 2u);
  }  // no commit: the temporary file goes, the old file stays
  EXPECT_EQ(read_text(target), "old");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.h5"});
  {
    ReplaceOnCommit output(target);
    write_text(output.temporary_path(), "new");
    output.commit();
  }
  EXPECT_EQ(read_text(target), "new");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.h5"});
  expect_error([&] { ReplaceOnCommit output(dir.file("missing/out.h5")); },
               {"missing", "does not exist"});
  std::filesystem::create_directory(dir.file("sub"));
  expect_error([&] { ReplaceOnCommit output(dir.file("sub")); }, {"is a directory"});
}

}  // namespace
}  // namespace sinkgrad::testing
