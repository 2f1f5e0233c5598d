#include "experiments/study/study_log.hpp"

#include <filesystem>

#include "experiments/study/log_descriptions.hpp"
#include "experiments/study/run_group.hpp"
#include "io/undo_journal.hpp"
#include "io/writer_lock.hpp"

namespace sinkgrad::study {
namespace {

constexpr const char* complete_attribute = "complete";

bool finished(const h5::Object& object) {
  return h5::has_attribute(object, complete_attribute) &&
         h5::read_int_attribute(object, complete_attribute) == 1;
}

void mark_finished(const h5::Object& object) {
  h5::write_int_attribute(object, complete_attribute, 1);
}

// What --resume compares and what a widened sweep replaces.
void write_definition(const h5::File& file, const LogHeader& header) {
  h5::write_string_attribute(file, "definition", header.definition);
  h5::write_string_attribute(file, "study", canonical_text(header.study));
  h5::write_string_attribute(file, "overrides", header.overrides);
  h5::write_string_attribute(file, "definition_path", header.definition_path);
}

std::string reference_path(const InputSpec& input, Precision precision, const std::string& leaf) {
  return "references/" + input.id + "/" + std::string(to_string(precision)) + "/" + leaf;
}

std::optional<HostBatch<double>> read_gradient(const h5::File& file, const std::string& path,
                                               const InputSpec& input) {
  if (!file.has_group(path)) return std::nullopt;
  const h5::Group group = file.open_group(path);
  if (!finished(group) || !group.has_dataset("grad")) return std::nullopt;
  HostBatch<double> gradient = h5::read_batch<double>(group, "grad");
  if (gradient.batch() != input.batch || gradient.n() != input.n) return std::nullopt;
  return gradient;
}

void write_header(const h5::File& file, const LogHeader& header) {
  h5::write_string_attribute(file, "schema", log_schema);
  h5::write_int_attribute(file, "schema_version", log_schema_version);
  h5::write_string_attribute(file, "tool_version", header.tool_version);
  write_definition(file, header);
  h5::write_string_attribute(file, "study_name", header.study_name);
  h5::write_string_attribute(file, "started", header.started);
  h5::write_string_attribute(file, "host", header.host);
  h5::write_string_attribute(file, "devices", header.devices);
  write_descriptions(file);
  file.create_group("inputs");
  file.create_group("references");
  file.create_group("runs");
}

}  // namespace

StudyLog StudyLog::open(const std::string& path, const LogHeader& header, bool resume) {
  // Held until the log is closed: a second writer is refused whatever HDF5's locking does.
  auto lock = std::make_unique<WriterLock>(path);
  // A writer that died mid-write left a journal: the log goes back to its last complete write
  // before anything reads it.
  UndoJournal::recover(path);
  if (!std::filesystem::exists(path)) {
    StudyLog log(std::move(lock),
                 h5::File::create(path, h5::File::Exists::fail, h5::File::Journal::undo), path);
    log.record("the log's header", [&] { write_header(log.file_, header); });
    return log;
  }
  if (!resume)
    throw Error("the log '" + path +
                "' exists; pass --resume to keep its runs and run only the missing ones, or "
                "give another --output");
  StudyLog log(std::move(lock),
               h5::File::open(path, h5::File::Mode::read_write, h5::File::Journal::undo), path);
  const h5::File& file = log.file_;
  if (!h5::has_attribute(file, "schema") || h5::read_string_attribute(file, "schema") != log_schema)
    throw Error("'" + path + "' is not a sinkgrad study log (no attribute schema = " + log_schema +
                "); give another --output");
  // Logs written before the canonical study was stored: derive it from the definition text.
  const Entries logged =
      h5::has_attribute(file, "study")
          ? read_entries(h5::read_string_attribute(file, "study"), "'" + path + "'")
          : read_entries(h5::read_string_attribute(file, "definition"), "'" + path + "'");
  if (const std::string difference = resume_difference(logged, header.study); !difference.empty())
    throw Error("'" + path + "' was made from a different study: " + difference + " ('" +
                header.definition_path +
                "' with its overrides); --resume keeps the fixed settings and may only add to "
                "the sweep's lists, or give another --output");
  log.record("the resumed study", [&] {
    // A widened sweep: the log now describes the wider study (its runs are a subset of it).
    if (canonical_text(logged) != canonical_text(header.study)) write_definition(file, header);
    write_descriptions(file);  // logs of older versions lack them
    log.remove_unfinished("runs");
    log.remove_unfinished("inputs");
    if (file.has_group("references"))
      for (const std::string& input : file.open_group("references").children())
        for (const std::string& precision : file.open_group("references/" + input).children())
          log.remove_unfinished("references/" + input + "/" + precision);
  });
  return log;
}

void StudyLog::record(const std::string& what, const std::function<void()>& write) {
  if (!failure_.empty()) throw Error(failure_);
  try {
    write();
    file_.commit();
  } catch (const std::exception& error) {
    // The file goes back to its last commit when it is closed (the journal), so the log holds
    // exactly the complete writes before this one.
    file_.abandon();
    failure_ = "cannot record " + what + " in the log '" + path_ + "': " + error.what() +
               "; the log is left as it was after its last complete write (--resume completes "
               "it once the cause is fixed)";
    throw Error(failure_);
  }
}

void StudyLog::remove_unfinished(const std::string& parent) const {
  if (!file_.has_group(parent)) return;
  const h5::Group group = file_.open_group(parent);
  for (const std::string& child : group.children())
    if (!group.has_group(child) || !finished(group.open_group(child))) group.remove(child);
}

std::set<std::string> StudyLog::finished_runs() const {
  std::set<std::string> ids;
  const h5::Group runs = file_.require_group("runs");
  for (const std::string& child : runs.children())
    if (runs.has_group(child) && finished(runs.open_group(child))) ids.insert(child);
  return ids;
}

bool StudyLog::has_input(const InputSpec& input) const {
  const std::string path = "inputs/" + input.id;
  return file_.has_group(path) && finished(file_.open_group(path));
}

void StudyLog::write_input(const InputSpec& input, const HostBatch<double>& logits,
                           const HostBatch<double>& grad_output) {
  record("input " + input.id, [&] {
    const h5::Group group = file_.require_group("inputs").create_group(input.id);
    h5::write_string_attribute(group, "key", input.key);
    h5::write_int_attribute(group, "n", input.n);
    h5::write_int_attribute(group, "batch", input.batch);
    h5::write_string_attribute(group, "logits_source", input.logits.text);
    h5::write_int_attribute(group, "seed", static_cast<std::int64_t>(input.seed));
    described(h5::write_batch<double>(group, "logits", logits.view()));
    described(h5::write_batch<double>(group, "grad_output", grad_output.view()));
    mark_finished(group);
  });
}

std::optional<HostBatch<double>> StudyLog::read_unrolled_reference(
    const InputSpec& input, Precision precision, int T, const std::string& forward) const {
  return read_gradient(file_, reference_path(input, precision, "T_" + std::to_string(T) + forward),
                       input);
}

void StudyLog::write_unrolled_reference(const InputSpec& input, Precision precision, int T,
                                        const std::string& forward,
                                        const HostBatch<double>& gradient) {
  record("a reference of input " + input.id, [&] {
    const h5::Group group =
        file_.require_group(reference_path(input, precision, "T_" + std::to_string(T) + forward));
    h5::write_int_attribute(group, "T", T);
    described(h5::write_batch<double>(group, "grad", gradient.view()));
    mark_finished(group);
  });
}

std::optional<ConvergedReference> StudyLog::read_converged_reference(
    const InputSpec& input, Precision precision, const std::string& forward) const {
  const std::string path = reference_path(input, precision, "converged" + forward);
  auto gradient = read_gradient(file_, path, input);
  if (!gradient) return std::nullopt;
  const h5::Group group = file_.open_group(path);
  ConvergedReference reference;
  reference.gradient = std::move(*gradient);
  reference.T = static_cast<int>(h5::read_int_attribute(group, "T"));
  reference.violation_max = h5::read_double_attribute(group, "violation_max");
  reference.reached = h5::read_int_attribute(group, "reached") != 0;
  return reference;
}

void StudyLog::write_converged_reference(const InputSpec& input, Precision precision,
                                         const std::string& forward,
                                         const ConvergedReference& reference) {
  record("the converged reference of input " + input.id, [&] {
    const h5::Group group =
        file_.require_group(reference_path(input, precision, "converged" + forward));
    h5::write_int_attribute(group, "T", reference.T);
    h5::write_double_attribute(group, "violation_max", reference.violation_max);
    h5::write_int_attribute(group, "reached", reference.reached ? 1 : 0);
    described(h5::write_batch<double>(group, "grad", reference.gradient.view()));
    mark_finished(group);
  });
}

void StudyLog::write_failed_run(const RunSpec& run, const std::string& error) {
  record("run " + run.id, [&] {
    const h5::Group runs = file_.require_group("runs");
    if (runs.has(run.id)) runs.remove(run.id);
    const h5::Group group = runs.create_group(run.id);
    h5::write_string_attribute(group, "key", run.key);
    h5::write_string_attribute(group, "solver", run.solver);
    h5::write_string_attribute(group, "error", error);
    h5::write_int_attribute(group, "failed", 1);
    h5::write_int_attribute(group, complete_attribute, 0);
  });
}

void StudyLog::write_run(const RunSpec& run, const InputSpec& input, const RunRecord& result) {
  record("run " + run.id,
         [&] { write_run_group(file_.require_group("runs"), run, input, result); });
}

}  // namespace sinkgrad::study
