// Signed results at the command line: `keygen`, `verify`, and what `run` and `connect` do with --sign-key
// (the key loaded before the trial, the result signed and written after it). relay/attest/ does the work.
#pragma once

#include "relay/attest/signed_result.hpp"
#include "relay/attest/signing_key.hpp"
#include "relay/cli/options.hpp"
#include "relay/trial/backend.hpp"
#include "relay/trial/trial.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace maka_eval::relay {

[[nodiscard]] int keygen_command(std::span<const std::string_view> args);
[[nodiscard]] int verify_command(std::span<const std::string_view> args);

// A trial's signer: the key, checked and loaded before the trial so that a bad one costs no trial, and the
// relay's own digest, hashed meanwhile.
class trial_signer {
  public:
    // nullopt with nothing to sign (no key given); an error for a key that cannot be used.
    static boost::system::result<std::optional<trial_signer>, attestation_error>
    from(const common_options& options);
    // The envelope line of the finished trial, written to --attestation when given. An error says why
    // nothing was written; the trial's own outcome stands.
    boost::system::result<std::string, attestation_error>
    sign(const trial_config& config, const trial_outcome& outcome, const backend& env);

  private:
    trial_signer(signing_key key, std::string path) : key_(std::move(key)), path_(std::move(path)) {}
    signing_key key_;
    std::string path_;
    std::optional<own_binary_digest> relay_digest_;
};

} // namespace maka_eval::relay
