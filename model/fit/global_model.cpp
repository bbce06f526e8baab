#include "model/fit/global_model.h"

#include <fstream>

#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

using nlohmann::json;

template <typename T>
json or_null(const std::optional<T>& value) {
  return value ? json(*value) : json();
}

// Null, or absent from a file older than the field (the schema requires the rest).
template <typename T>
std::optional<T> optional_at(const json& doc, const char* key) {
  if (!doc.contains(key) || doc.at(key).is_null()) return std::nullopt;
  return doc.at(key).get<T>();
}

// The parameters of one fit are all null or all numbers.
bool fit_present(const json& doc, const std::vector<const char*>& keys, const std::string& where) {
  size_t present = 0;
  for (const char* key : keys) present += !doc.at(key).is_null();
  if (present != 0 && present != keys.size()) {
    throw InputError(where + "/" + keys.front() + ": the parameters of a fit are all numbers or all null");
  }
  return present != 0;
}

json measured_to_json(const MeasuredSeries& series) {
  json runs = json::array();
  for (const auto& run : series.runs) {
    runs.push_back({{"line", run.line},
                    {"batch", run.batch},
                    {"oom", run.oom},
                    {"samples_per_s", or_null(run.samples_per_s)},
                    {"iter_s", or_null(run.iter_s)},
                    {"peak_bytes", or_null(run.peak_bytes)}});
  }
  return {{"gpu_memory_bytes", or_null(series.gpu_memory_bytes)}, {"peak_was_bytes", series.peak_was_bytes}, {"runs", runs}};
}

// The schema has checked each field's type; what it cannot say is checked here.
MeasuredSeries measured_from_json(const json& doc, const SeriesFit& fit, const std::string& where) {
  MeasuredSeries series{fit.gpu,
                        optional_at<double>(doc, "gpu_memory_bytes"),
                        fit.gpus,
                        fit.network,
                        fit.precision,
                        fit.strategy,
                        doc.at("peak_was_bytes"),
                        {}};
  const json& runs = doc.at("runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    const json& run = runs[i];
    MeasuredRun r{run.at("line"),
                  run.at("batch"),
                  run.at("oom"),
                  optional_at<double>(run, "samples_per_s"),
                  optional_at<double>(run, "iter_s"),
                  optional_at<double>(run, "peak_bytes")};
    if (!r.oom && !r.samples_per_s && !r.iter_s) {
      throw InputError(where + "/measured/runs/" + std::to_string(i) +
                       ": samples_per_s and iter_s are both null: a run that did not run out of memory needs one");
    }
    series.runs.push_back(r);
  }
  return series;
}

SeriesFit series_from_json(const json& doc, const std::string& where) {
  SeriesFit fit;
  fit.gpu = doc.at("gpu");
  fit.gpus = doc.value("gpus", 1);
  fit.network = doc.at("network");
  fit.precision = doc.at("precision");
  fit.strategy = doc.at("strategy");
  fit.budget_bytes = doc.at("budget_bytes");
  fit.points = doc.at("points");
  fit.memory_points = doc.at("memory_points");
  fit.smallest_oom_batch = optional_at<int>(doc, "smallest_oom_batch");
  if (fit_present(doc, {"alpha_bytes_per_sample", "beta_bytes", "memory_floor_bytes"}, where)) {
    const double beta = doc.at("beta_bytes");
    fit.memory =
        RobustFit<SaturatingCurve>{{doc.at("memory_floor_bytes").get<double>() - beta, doc.at("alpha_bytes_per_sample"), beta},
                                   optional_at<double>(doc, "r2_memory")};
  }
  if (fit_present(doc, {"gamma_s_per_sample", "delta_s"}, where)) {
    fit.time_linear =
        RobustFit<LinearCurve>{{doc.at("gamma_s_per_sample"), doc.at("delta_s")}, optional_at<double>(doc, "r2_time_linear")};
  }
  if (fit_present(doc, {"a_s", "k_s_per_sample", "c_s"}, where)) {
    fit.time_max = RobustFit<SaturatingCurve>{{doc.at("a_s"), doc.at("k_s_per_sample"), doc.at("c_s")},
                                              optional_at<double>(doc, "r2_time_max")};
  }
  fit.max_batch = optional_at<int>(doc, "max_batch");
  fit.max_batch_limit = doc.at("max_batch_limit").is_null() ? "" : doc.at("max_batch_limit").get<std::string>();
  fit.best_batch = optional_at<int>(doc, "best_batch");
  fit.best_samples_per_s = optional_at<double>(doc, "best_samples_per_s");
  fit.best_measured_batch = optional_at<int>(doc, "best_measured_batch");
  fit.best_measured_samples_per_s = optional_at<double>(doc, "best_measured_samples_per_s");
  if (fit.strategy != kBaselineStrategy) {
    fit.verdict = Verdict{optional_at<bool>(doc, "helps"), optional_at<bool>(doc, "helps_analytic"),
                          optional_at<double>(doc, "baseline_best_samples_per_s"),
                          doc.at("verdict_note").is_null() ? "" : doc.at("verdict_note").get<std::string>(),
                          optional_at<double>(doc, "baseline_best_measured_samples_per_s")};
  }
  fit.notes = doc.at("notes").get<std::vector<std::string>>();
  if (doc.contains("measured") && !doc.at("measured").is_null())
    fit.measured = measured_from_json(doc.at("measured"), fit, where);
  return fit;
}

}  // namespace

json to_json(const SeriesFit& fit) {
  const Verdict none;
  const Verdict& v = fit.verdict ? *fit.verdict : none;
  return {{"gpu", fit.gpu},
          {"gpus", fit.gpus},
          {"network", fit.network},
          {"precision", fit.precision},
          {"strategy", fit.strategy},
          {"budget_bytes", fit.budget_bytes},
          {"points", fit.points},
          {"memory_points", fit.memory_points},
          {"smallest_oom_batch", or_null(fit.smallest_oom_batch)},
          {"alpha_bytes_per_sample", fit.memory ? json(fit.memory->curve.per_sample) : json()},
          {"beta_bytes", fit.memory ? json(fit.memory->curve.fixed) : json()},
          {"memory_floor_bytes", fit.memory ? json(fit.memory->curve.floor_level()) : json()},
          {"r2_memory", fit.memory ? or_null(fit.memory->r2) : json()},
          {"gamma_s_per_sample", fit.time_linear ? json(fit.time_linear->curve.per_sample) : json()},
          {"delta_s", fit.time_linear ? json(fit.time_linear->curve.fixed) : json()},
          {"r2_time_linear", fit.time_linear ? or_null(fit.time_linear->r2) : json()},
          {"a_s", fit.time_max ? json(fit.time_max->curve.floor) : json()},
          {"k_s_per_sample", fit.time_max ? json(fit.time_max->curve.per_sample) : json()},
          {"c_s", fit.time_max ? json(fit.time_max->curve.fixed) : json()},
          {"r2_time_max", fit.time_max ? or_null(fit.time_max->r2) : json()},
          {"time_form", fit.time_max      ? json("max")
                        : fit.time_linear ? json("linear")
                                          : json()},
          {"r2_time", or_null(fit.r2_time())},
          {"max_batch", or_null(fit.max_batch)},
          {"max_batch_limit", fit.max_batch_limit.empty() ? json() : json(fit.max_batch_limit)},
          {"best_batch", or_null(fit.best_batch)},
          {"best_samples_per_s", or_null(fit.best_samples_per_s)},
          {"best_measured_batch", or_null(fit.best_measured_batch)},
          {"best_measured_samples_per_s", or_null(fit.best_measured_samples_per_s)},
          {"helps", or_null(v.helps)},
          {"helps_analytic", or_null(v.helps_analytic)},
          {"baseline_best_samples_per_s", or_null(v.baseline_best_samples_per_s)},
          {"baseline_best_measured_samples_per_s", or_null(v.baseline_best_measured_samples_per_s)},
          {"verdict_note", v.note.empty() ? json() : json(v.note)},
          {"notes", fit.notes},
          {"measured", fit.measured ? measured_to_json(*fit.measured) : json()}};
}

json to_json(const GlobalModel& model) {
  json series = json::array();
  for (const auto& fit : model.series) series.push_back(to_json(fit));
  return {{"papaya_model", 1},
          {"kind", "global"},
          {"source", model.source},
          {"budget_bytes", or_null(model.budget_bytes)},
          {"series", series}};
}

GlobalModel load_global_model(const std::string& path) {
  const json doc = read_json_file(path, "model");
  validate_json(doc, "model-global", path);
  GlobalModel model{doc.at("source"), optional_at<double>(doc, "budget_bytes"), {}};
  const json& series = doc.at("series");
  for (size_t i = 0; i < series.size(); ++i) {
    model.series.push_back(series_from_json(series[i], path + ": /series/" + std::to_string(i)));
  }
  return model;
}

namespace {

// Reads events up to the document's top-level /kind and stops there: a layer
// model of a large mixture is hundreds of megabytes, its /kind near the start.
class TopLevelKind : public nlohmann::json_sax<json> {
 public:
  std::string kind;

  bool null() override { return seen_value(); }
  bool boolean(bool) override { return seen_value(); }
  bool number_integer(number_integer_t) override { return seen_value(); }
  bool number_unsigned(number_unsigned_t) override { return seen_value(); }
  bool number_float(number_float_t, const string_t&) override { return seen_value(); }
  bool binary(binary_t&) override { return seen_value(); }
  bool string(string_t& value) override {
    if (next_is_kind_) kind = value;
    return seen_value();
  }
  bool start_object(std::size_t) override {
    if (next_is_kind_) return false;
    ++depth_;
    return true;
  }
  // An array at the top is no object; one as the value of /kind is no kind.
  bool start_array(std::size_t) override {
    if (depth_ == 0 || next_is_kind_) return false;
    ++depth_;
    return true;
  }
  bool end_object() override { return --depth_ > 0; }
  bool end_array() override { return --depth_ > 0; }
  bool key(string_t& name) override {
    next_is_kind_ = depth_ == 1 && name == "kind";
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  int depth_ = 0;
  bool next_is_kind_ = false;

  // A scalar at the top is no object; the value of /kind ends the reading.
  bool seen_value() const { return depth_ > 0 && !next_is_kind_; }
};

}  // namespace

bool is_global_model_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read model");
  TopLevelKind reader;
  json::sax_parse(in, &reader);
  return reader.kind == "global";
}

}  // namespace papaya::model
