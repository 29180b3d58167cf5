// `maka-eval-relay verify`: a signed trial result checked offline — the envelope, its signature with the
// given public key, the statement's shape against its schema and predicate version, the result frame
// against `executed`, and with an artifacts directory every listed file's SHA-256 and nothing unlisted.
// The first mismatch is the error, naming what does not match.
#pragma once

#include "relay/attest/attestation_error.hpp"
#include "relay/attest/signing_key.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

struct verified_result {
    std::string keyid;
    boost::json::object statement;
    std::size_t artifacts_checked = 0; // files compared with --artifacts
};

[[nodiscard]] boost::system::result<verified_result, attestation_error>
verify_attestation(std::string_view envelope_text, const verifying_key& key,
                   const std::optional<std::string>& artifacts_dir);

// What was attested, in a few lines for a person.
[[nodiscard]] std::string describe(const verified_result& result);

} // namespace maka_eval::relay
