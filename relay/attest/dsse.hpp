// DSSE v1.0 (github.com/secure-systems-lab/dsse, envelope.md and protocol.md): the envelope a signed
// result travels in, one JSON line, and the pre-authentication encoding its signature is over.
//
//   PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body   (LEN: ASCII decimal, bytes)
//
// The envelope: {"payload": base64(body), "payloadType": type, "signatures": [{"keyid": …, "sig": base64}]}
// (standard base64 with padding). Reading is strict about what we write (exactly one signature) and
// says which field is wrong.
#pragma once

#include "relay/attest/attestation_error.hpp"

#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

inline constexpr std::string_view in_toto_payload_type = "application/vnd.in-toto+json";

[[nodiscard]] std::string pre_authentication_encoding(std::string_view type, std::string_view body);

struct dsse_envelope {
    std::string payload_type;
    std::string payload; // the body's bytes, decoded
    std::string keyid;
    std::string signature; // raw bytes, decoded
};

// One line, without "\n".
[[nodiscard]] std::string to_line(const dsse_envelope& envelope);
[[nodiscard]] boost::system::result<dsse_envelope, attestation_error> parse_envelope(std::string_view text);

} // namespace maka_eval::relay
