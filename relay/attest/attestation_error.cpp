// Names of the attestation faults (see attestation_error.hpp).
#include "relay/attest/attestation_error.hpp"

#include <stdexcept>

namespace maka_eval::relay {

std::string_view to_string(attestation_fault fault) {
    switch (fault) {
    case attestation_fault::key_file:
        return "key-file";
    case attestation_fault::key_format:
        return "key-format";
    case attestation_fault::crypto:
        return "crypto";
    case attestation_fault::write:
        return "write";
    case attestation_fault::envelope:
        return "envelope";
    case attestation_fault::signature:
        return "signature";
    case attestation_fault::statement:
        return "statement";
    case attestation_fault::artifact:
        break;
    }
    return "artifact";
}

void throw_exception_from_error(const attestation_error& e, const boost::source_location&) {
    throw std::runtime_error(std::string(to_string(e.fault)) + ": " + e.message);
}

} // namespace maka_eval::relay
