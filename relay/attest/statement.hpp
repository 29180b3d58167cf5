// The in-toto Statement v1 a signed trial result carries: its subjects (the artifacts the helper's receipt
// lists, the receipt, the decoded result frame) and our predicate, what the relay observed of the trial.
// Its schema is contracts/schema/attestation-statement.schema.json, built into the relay for `verify`.
//
// Built from what the trial recorded (trial_record) and what the backend says of the environment; nothing
// in it is a secret: the token, the instruction and argv only as SHA-256, variables and credentials by name.
#pragma once

#include "contracts/session_messages.hpp"
#include "relay/trial/backend.hpp"
#include "relay/trial/trial.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

namespace maka_eval::relay {

inline constexpr std::string_view statement_type = "https://in-toto.io/Statement/v1";
// Versioned: a verifier refuses a version it does not know rather than half-read it.
inline constexpr std::string_view predicate_type = "urn:maka-eval:trial-result:v1";
// The subject that stands for the decoded result frame (`executed`'s stdout, UTF-8).
inline constexpr std::string_view frame_subject_name = "result-frame";

struct statement_inputs {
    const trial_record& record;
    const environment_facts& environment;
    const std::optional<contracts::subject_usage>& usage;
    std::int64_t teardown_budget_ms = 0;
    std::string relay_version;
    std::string relay_sha256;
    std::string token_sha256;
    std::string instruction_sha256;
};

[[nodiscard]] boost::json::object make_statement(const statement_inputs& in);

// The schema's text (generated into the build from contracts/schema/).
[[nodiscard]] std::string_view statement_schema_text();

} // namespace maka_eval::relay
