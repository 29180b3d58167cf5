// Signed results at the command line: `keygen`, `verify`, and what `run` and `connect` do with --sign-key
// (the key loaded before the trial, the result signed and written after it). relay/attest/ does the work.
#pragma once

#include "relay/attest/signed_result.hpp"
#include "relay/attest/signing_key.hpp"
#include "relay/cli/options.hpp"
#include "relay/trial/backend.hpp"
#include "relay/trial/trial.hpp"

#include <future>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/stat.h>

namespace maka_eval::relay {

[[nodiscard]] int keygen_command(std::span<const std::string_view> args);
[[nodiscard]] int verify_command(std::span<const std::string_view> args);

// A trial's signer: the key file checked and read before the trial, so that a wrong one costs no trial;
// OpenSSL's parse of it (milliseconds of decoder and provider start-up) and the relay's own digest run on
// threads of their own meanwhile, off the trial's path. The trial's one Asio thread never waits for them:
// only sign(), after the trial, does.
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
    explicit trial_signer(std::string path) : path_(std::move(path)) {}
    [[nodiscard]] std::string relay_digest();

    std::future<boost::system::result<signing_key, attestation_error>> key_;
    std::string path_;
    std::optional<own_binary_digest> relay_digest_;
    std::optional<struct stat> relay_file_; // what /proc/self/exe is, the key its digest is remembered by
    bool relay_digest_known_ = false;
};

} // namespace maka_eval::relay
