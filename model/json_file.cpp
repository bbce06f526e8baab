#include "model/json_file.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "model/error.h"

#if !defined(PAPAYA_CONFIG_DIR) || !defined(PAPAYA_DATA_FROM_BIN)
#error "PAPAYA_CONFIG_DIR and PAPAYA_DATA_FROM_BIN must be defined by the build"
#endif

namespace papaya::model {
namespace fs = std::filesystem;

std::string config_dir() {
  const char* env = std::getenv("PAPAYA_DATA");
  std::string dir = PAPAYA_CONFIG_DIR;  // the source tree's, for a program in the build tree
  if (env && *env) {
    dir = env;
  } else {
    std::error_code error;
    const fs::path program = fs::read_symlink("/proc/self/exe", error);
    const fs::path installed = (program.parent_path() / PAPAYA_DATA_FROM_BIN).lexically_normal();
    if (!error && fs::is_directory(installed / "schemas", error)) dir = installed.string();
  }
  std::error_code error;
  if (!fs::is_directory(fs::path(dir) / "schemas", error)) {
    throw InputError("papaya's data (configs, catalogs, schemas) is not at " + dir +
                     (env && *env ? " (PAPAYA_DATA)" : ": reinstall papaya, or set PAPAYA_DATA to its folder"));
  }
  return dir;
}

std::vector<std::pair<std::string, nlohmann::json>> read_catalog_folder(const std::string& folder, const std::string& what) {
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  for (const auto& entry : fs::directory_iterator(fs::path(config_dir()) / folder)) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    docs.emplace_back(path, read_json_file(path, what));
  }
  return docs;
}

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read " + what);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the offset of the error: turn it into a line number.
    const std::string s = text.str();
    const size_t upto = std::min<size_t>(e.byte, s.size());
    const long line = 1 + std::count(s.begin(), s.begin() + static_cast<long>(upto), '\n');
    throw InputError(path + ":" + std::to_string(line) + ": malformed JSON in " + what);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number past a double (1e999) is no parse_error; nlohmann's text names it.
    const std::string why = e.what();
    throw InputError(path + ": malformed JSON in " + what + ": " + why.substr(why.find("] ") + 2));
  }
}

namespace {

// valijson reports a context like ["<root>", "[layers]", "[0]"]: turn it into
// a JSON pointer "/layers/0".
std::string json_pointer(const std::vector<std::string>& context) {
  std::string out;
  for (const auto& c : context) {
    if (c == "<root>") continue;
    std::string part = c;
    if (part.size() >= 2 && part.front() == '[' && part.back() == ']') part = part.substr(1, part.size() - 2);
    if (part.size() >= 2 && part.front() == '"' && part.back() == '"') part = part.substr(1, part.size() - 2);
    out += "/" + part;
  }
  return out.empty() ? "/" : out;
}

// valijson adds summary errors ("Failed to validate against schema associated
// with property name 'x'") around the one that says what is wrong: report the
// deepest error that is not such a summary.
std::string most_specific(valijson::ValidationResults& results) {
  valijson::ValidationResults::Error error;
  std::vector<valijson::ValidationResults::Error> all;
  while (results.popError(error)) all.push_back(error);
  const auto is_summary = [](const auto& e) { return e.description.find("Failed to validate") != std::string::npos; };
  const valijson::ValidationResults::Error* best = &all.front();
  for (const auto& e : all) {
    if (is_summary(e)) continue;
    if (is_summary(*best) || e.context.size() > best->context.size()) best = &e;
  }
  return json_pointer(best->context) + ": " + best->description;
}

const valijson::Schema& load_schema(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<valijson::Schema>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[name];
  if (!slot) {
    const auto path = (fs::path(config_dir()) / "schemas" / (name + ".schema.json")).string();
    const nlohmann::json doc = read_json_file(path, "schema");
    slot = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    parser.populateSchema(adapter, *slot);
  }
  return *slot;
}

}  // namespace

void validate_json(const nlohmann::json& doc, const std::string& schema, const std::string& label) {
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(doc);
  if (!validator.validate(load_schema(schema), adapter, &results)) {
    throw InputError(label + ": " + most_specific(results));
  }
}

void write_file_atomically(const std::string& path, const std::function<void(const std::string& temporary)>& write) {
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp");
  try {
    write(tmp.string());
    fs::rename(tmp, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp);
    if (!out) throw InputError(path + ": cannot write");
    out << text;
    if (!out.flush()) throw InputError(path + ": write failed");
  });
}

void write_json_file(const std::string& path, const nlohmann::json& doc) { write_text_file(path, doc.dump(2) + "\n"); }

}  // namespace papaya::model
