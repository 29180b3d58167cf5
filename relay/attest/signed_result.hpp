// Signing a trial's statement and writing the envelope: what `run` and `connect` do after the trial when
// given --sign-key.
//
// The relay's own SHA-256 (a predicate field) is computed on a thread of its own from the start, while the
// trial waits on the engine: tens of megabytes must not be hashed on the trial's path, and the trial's one
// Asio thread never waits for it (only the signing, after the trial, joins it).
#pragma once

#include "relay/attest/attestation_error.hpp"
#include "relay/attest/signing_key.hpp"

#include <future>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

class own_binary_digest {
  public:
    // Starts hashing /proc/self/exe, unless `known` (remembered for this very file) says it already.
    explicit own_binary_digest(std::optional<std::string> known = std::nullopt);
    // The lowercase hex digest (empty if the binary could not be read); waits for the hashing to end.
    [[nodiscard]] std::string get();

  private:
    std::future<std::string> digest_;
};

// The DSSE envelope (one line, without "\n") of `statement`, signed with `key`.
[[nodiscard]] boost::system::result<std::string, attestation_error>
sign_statement(const signing_key& key, const boost::json::object& statement);

// Writes `line` and "\n" to `path`, created 0600 (through a temporary file beside it and a rename, so
// that a reader never sees half an envelope and an earlier file's mode is not kept).
[[nodiscard]] boost::system::result<void, attestation_error> write_attestation(const std::string& path,
                                                                               std::string_view line);
// Before the trial: the directory `path` would be written into exists (so a trial is not run for nothing).
[[nodiscard]] boost::system::result<void, attestation_error> check_attestation_path(const std::string& path);

} // namespace maka_eval::relay
