// Verifying a signed trial result (see verification.hpp).
#include "relay/attest/verification.hpp"

#include "contracts/digest.hpp"
#include "contracts/json_schema.hpp"
#include "contracts/receipt.hpp"
#include "contracts/wire_json.hpp"
#include "relay/attest/dsse.hpp"
#include "relay/attest/statement.hpp"
#include "relay/support/private_file.hpp"

#include <fcntl.h>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <sstream>

#include <boost/json/serialize.hpp>

namespace maka_eval::relay {

namespace json = boost::json;

namespace {

attestation_error statement_error(const std::string& why) {
    return {attestation_fault::statement, "the statement: " + why};
}

// "artifact NAME: …" or "--artifacts DIR: …", built in one string.
attestation_error artifact_error(std::string_view lead, std::string_view subject,
                                 std::initializer_list<std::string_view> rest) {
    std::string text(lead);
    text.append(subject);
    for (const auto part : rest) {
        text.append(part);
    }
    return {attestation_fault::artifact, std::move(text)};
}

// Every listed file hashes to its digest, and the directory holds no file the statement does not list.
boost::system::result<std::size_t, attestation_error>
check_artifacts(const std::map<std::string, std::string>& listed, const std::string& dir) {
    std::error_code failed;
    if (!std::filesystem::is_directory(dir, failed)) {
        return artifact_error("--artifacts ", dir, {": not a directory"});
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir, failed)) {
        const auto name = entry.path().filename().string();
        if (!listed.contains(name)) {
            return artifact_error("artifact ", name, {": in ", dir, " but not in the signed result"});
        }
    }
    if (failed) {
        return artifact_error("--artifacts ", dir, {": ", failed.message()});
    }
    for (const auto& [name, digest] : listed) {
        const auto path = std::string(dir).append("/").append(name);
        std::error_code missing;
        if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, missing))) {
            return artifact_error("artifact ", name, {": signed, but not a file in ", dir});
        }
        const auto found = file_sha256(path, O_NOFOLLOW);
        if (!found) {
            return artifact_error("artifact ", name, {": cannot be read"});
        }
        if (*found != digest) {
            return artifact_error("artifact ", name,
                                  {": its SHA-256 is ", *found, ", the signed result says ", digest});
        }
    }
    return listed.size();
}

std::string text_at(const json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    return value != nullptr && value->is_string()  ? std::string(value->get_string())
           : value != nullptr && !value->is_null() ? json::serialize(*value)
                                                   : std::string();
}

} // namespace

boost::system::result<verified_result, attestation_error>
verify_attestation(std::string_view envelope_text, const verifying_key& key,
                   const std::optional<std::string>& artifacts_dir) {
    auto envelope = parse_envelope(envelope_text);
    if (!envelope) {
        return envelope.error();
    }
    if (!envelope->keyid.empty() && envelope->keyid != key.key_id()) {
        return attestation_error{attestation_fault::signature, "signed by key " + envelope->keyid +
                                                                   ", not by the key given (" + key.key_id() +
                                                                   ")"};
    }
    if (!key.verify(pre_authentication_encoding(envelope->payload_type, envelope->payload),
                    envelope->signature)) {
        return attestation_error{attestation_fault::signature,
                                 "the signature does not verify with this key: the payload, its type or the "
                                 "signature was changed, or another key signed it"};
    }
    if (envelope->payload_type != in_toto_payload_type) {
        return statement_error("payloadType is " + envelope->payload_type + ", not " +
                               std::string(in_toto_payload_type));
    }
    auto statement = contracts::parse_object(envelope->payload, std::size_t{64} << 20U);
    if (!statement) {
        return statement_error("the payload is not a JSON object");
    }
    if (const auto type = text_at(*statement, "predicateType"); type != predicate_type) {
        return statement_error("predicate type " + (type.empty() ? std::string("(none)") : type) +
                               " is not one this relay knows (" + std::string(predicate_type) + ")");
    }
    static const auto schema =
        contracts::parse_object(statement_schema_text(), std::size_t{1} << 20U).value();
    if (auto violation = contracts::schema_violation(schema, *statement); !violation.empty()) {
        return statement_error(violation + " (contracts/schema/attestation-statement.schema.json)");
    }
    std::map<std::string, std::string> listed;
    std::string frame_digest;
    for (const auto& subject : statement->at("subject").get_array()) {
        const auto& object = subject.get_object();
        const std::string name(object.at("name").get_string());
        const std::string digest(object.at("digest").get_object().at("sha256").get_string());
        if (name == frame_subject_name) {
            frame_digest = digest;
        } else if (!listed.emplace(name, digest).second || name.find('/') != std::string::npos ||
                   name == "." || name == "..") {
            return statement_error("subject " + name + " is listed twice or is not a file name");
        }
    }
    // The frame subject and `executed` are one fact said twice: they must agree.
    const auto& predicate = statement->at("predicate").get_object();
    const auto& executed = predicate.at("executed");
    if (executed.is_object()) {
        const auto frame = contracts::sha256_hex(executed.get_object().at("stdout").get_string());
        if (frame_digest != frame) {
            return statement_error("the result-frame subject does not match executed's stdout");
        }
    } else if (!frame_digest.empty()) {
        return statement_error("a result-frame subject without an executed message");
    }
    verified_result out{key.key_id(), std::move(*statement), 0};
    if (artifacts_dir) {
        auto checked = check_artifacts(listed, *artifacts_dir);
        if (!checked) {
            return checked.error();
        }
        out.artifacts_checked = *checked;
    }
    return out;
}

std::string describe(const verified_result& result) {
    const auto& predicate = result.statement.at("predicate").get_object();
    const auto& environment = predicate.at("environment").get_object();
    const auto& subject = predicate.at("subject").get_object();
    std::ostringstream out;
    out << "verified    signed by key " << result.keyid << "\n";
    out << "trial       " << text_at(predicate, "startedOn") << " → " << text_at(predicate, "finishedOn")
        << ", ended " << text_at(predicate, "ending") << "\n";
    if (const auto& executed = predicate.at("executed"); executed.is_object()) {
        const auto& e = executed.get_object();
        out << "executed    " << text_at(e, "termination") << ", exit code " << text_at(e, "exitCode")
            << ", diagnostic " << text_at(e.at("diagnostic").get_object(), "category") << "\n";
    } else {
        out << "executed    none was sent\n";
    }
    out << "environment " << text_at(environment, "backend");
    if (const auto id = text_at(environment, "containerId"); !id.empty()) {
        out << ", container " << id.substr(0, 12) << ", image " << text_at(environment, "imageId")
            << ", engine " << text_at(environment, "engine");
    }
    out << "\n";
    out << "subject     uid " << text_at(subject, "uid") << ", cwd " << text_at(subject, "cwd")
        << ", argv sha256 " << text_at(subject, "argvSha256").substr(0, 16) << "…\n";
    out << "relay       " << text_at(predicate.at("relay").get_object(), "version") << " (sha256 "
        << text_at(predicate.at("relay").get_object(), "sha256").substr(0, 16) << "…), helper "
        << text_at(predicate.at("helper").get_object(), "version") << "\n";
    out << "artifacts   " << result.statement.at("subject").get_array().size() << " subjects signed";
    if (result.artifacts_checked > 0) {
        out << "; " << result.artifacts_checked << " files match their digests, none unlisted";
    }
    out << "\n";
    return out.str();
}

} // namespace maka_eval::relay
