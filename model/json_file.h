#pragma once
// Reading and writing papaya's JSON documents: parse errors and schema
// violations become InputErrors naming the file, the JSON path and what was
// expected; writes are atomic so that no half-written file is ever left.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace papaya::model {

// The folder of shipped configs, catalogs and schemas: $PAPAYA_DATA, else
// share/papaya beside the program's bin/ (installed), else the source
// tree's configs/ (a program of the build tree). Throws InputError where
// that folder holds no schemas.
std::string config_dir();

// Every JSON file of a shipped catalog folder (configs/<folder>), parsed,
// with its path, in no particular order.
std::vector<std::pair<std::string, nlohmann::json>> read_catalog_folder(const std::string& folder, const std::string& what);

// Parses a JSON file; `what` names the kind of document in errors ("network config").
nlohmann::json read_json_file(const std::string& path, const std::string& what);

// Validates `doc` against configs/schemas/<schema>.schema.json. On failure
// throws InputError "<label>: <json path>: <what was expected>".
void validate_json(const nlohmann::json& doc, const std::string& schema, const std::string& label);

// Writes `doc` (pretty-printed) to `path` through a temporary file and a rename.
void write_json_file(const std::string& path, const nlohmann::json& doc);

// Writes `text` to `path` through a temporary file and a rename.
void write_text_file(const std::string& path, const std::string& text);

// Calls `write` with a temporary path beside `path`, then renames it to
// `path`. If `write` throws, the temporary file is removed and `path` is left
// as it was.
void write_file_atomically(const std::string& path, const std::function<void(const std::string& temporary)>& write);

}  // namespace papaya::model
