// DSSE v1.0 envelopes and PAE (see dsse.hpp).
#include "relay/attest/dsse.hpp"

#include "contracts/python_text.hpp"
#include "contracts/wire_json.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace maka_eval::relay {

namespace json = boost::json;

std::string pre_authentication_encoding(std::string_view type, std::string_view body) {
    std::string out = "DSSEv1 ";
    out.append(std::to_string(type.size())).append(" ").append(type).append(" ");
    out.append(std::to_string(body.size())).append(" ").append(body);
    return out;
}

std::string to_line(const dsse_envelope& envelope) {
    const json::object signature{{"keyid", envelope.keyid},
                                 {"sig", contracts::python::b64encode(envelope.signature)}};
    const json::object out{{"payload", contracts::python::b64encode(envelope.payload)},
                           {"payloadType", envelope.payload_type},
                           {"signatures", json::array{signature}}};
    return contracts::to_wire(out);
}

boost::system::result<dsse_envelope, attestation_error> parse_envelope(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.remove_suffix(1);
    }
    const auto bad = [](const std::string& what) {
        return attestation_error{attestation_fault::envelope, "not a DSSE envelope: " + what};
    };
    auto object = contracts::parse_object(text, 64U << 20U);
    if (!object) {
        return bad("the file is not one JSON object (" + object.error().message() + "; truncated?)");
    }
    const auto text_of = [&](const json::object& from, std::string_view key) -> const json::string* {
        const auto* value = from.if_contains(key);
        return value != nullptr && value->is_string() ? &value->get_string() : nullptr;
    };
    const auto* payload = text_of(*object, "payload");
    const auto* type = text_of(*object, "payloadType");
    const auto* signatures = object->if_contains("signatures");
    if (payload == nullptr || type == nullptr || signatures == nullptr || !signatures->is_array()) {
        return bad("payload, payloadType and signatures are required");
    }
    if (signatures->get_array().size() != 1 || !signatures->get_array()[0].is_object()) {
        return bad("exactly one signature is expected (ours carry one)");
    }
    const auto& signature = signatures->get_array()[0].get_object();
    const auto* keyid = text_of(signature, "keyid");
    const auto* sig = text_of(signature, "sig");
    if (sig == nullptr) {
        return bad("the signature has no sig");
    }
    auto body = contracts::python::b64decode_standard(std::string_view(payload->data(), payload->size()));
    if (!body) {
        return bad("payload is not standard base64");
    }
    auto raw = contracts::python::b64decode_standard(std::string_view(sig->data(), sig->size()));
    if (!raw) {
        return bad("sig is not standard base64");
    }
    return dsse_envelope{std::string(type->data(), type->size()), std::move(*body),
                         keyid != nullptr ? std::string(keyid->data(), keyid->size()) : std::string(),
                         std::move(*raw)};
}

} // namespace maka_eval::relay
