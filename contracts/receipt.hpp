// The artifacts' receipt: /logs/artifacts/maka-subject.receipt.json, what a verifier or an uploader checks
// the files against before trusting them.
//
// For each artifact the helper wrote: its name, the bytes on disk and their SHA-256 (of the file as it is,
// masked), whether it is complete, why not when it is not, and how many secret values were masked in it.
// Written by the helper after the artifacts, all synced before the relay reports `executed`.
// Schema: contracts/schema/receipt.schema.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

namespace maka_eval::contracts {

inline constexpr std::int64_t receipt_version = 1;
inline constexpr std::string_view receipt_artifact_name = "maka-subject.receipt.json";

struct artifact_receipt {
    std::string name;
    std::uint64_t bytes = 0; // on disk
    std::string sha256;      // of the bytes on disk
    bool complete = true;
    std::string incomplete; // why not: "cut at the artifact limit", "the disk refused a write: …", …
    std::uint64_t masked = 0;
};

[[nodiscard]] boost::json::object to_json(const std::vector<artifact_receipt>& artifacts);

} // namespace maka_eval::contracts
