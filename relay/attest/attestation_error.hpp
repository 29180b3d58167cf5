// What can go wrong with a key or a signed result, by cause: each names the file or the field it is about.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <boost/assert/source_location.hpp>

namespace maka_eval::relay {

enum class attestation_fault {
    key_file,   // the key file cannot be used as it is: missing, not a regular file, wrong owner or mode
    key_format, // not an Ed25519 key in PEM (PKCS#8 private, SubjectPublicKeyInfo public)
    crypto,     // OpenSSL refused an operation on a good key (no randomness, out of memory)
    write,      // an output file could not be written (keygen, --attestation)
    envelope,   // the envelope is not a DSSE envelope we wrote: not JSON, truncated, a field missing
    signature,  // the signature does not verify with this key (or was made by another)
    statement,  // the payload is not a statement of ours: its shape, its type, its predicate version
    artifact,   // an artifact differs from what was signed: changed, missing, or not listed
};
[[nodiscard]] std::string_view to_string(attestation_fault fault);

struct attestation_error {
    attestation_error() = default;
    attestation_error(attestation_fault kind, std::string text) : fault(kind), message(std::move(text)) {}
    attestation_fault fault = attestation_fault::envelope;
    std::string message;
};
// For result<T, attestation_error>::value() at the edges (main, tests): a runtime_error saying the message.
[[noreturn]] void throw_exception_from_error(const attestation_error& e,
                                             const boost::source_location& location);

} // namespace maka_eval::relay
