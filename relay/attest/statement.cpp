// The signed result's in-toto statement (see statement.hpp).
#include "relay/attest/statement.hpp"

#include "contracts/digest.hpp"
#include "contracts/receipt.hpp"
#include "contracts/wire_json.hpp"

#include <boost/json/array.hpp>

namespace maka_eval::relay {

namespace json = boost::json;

namespace {

json::object subject_of(std::string_view name, std::string_view sha256) {
    return {{"name", name}, {"digest", {{"sha256", sha256}}}};
}

json::array names_of(const std::vector<std::string>& names) {
    return json::array(names.begin(), names.end());
}

// The receipt's artifacts, then the receipt itself: what the artifacts directory holds.
void add_artifacts(json::array& subjects, const std::string& receipt) {
    if (receipt.empty()) {
        return;
    }
    if (auto object = contracts::parse_object(receipt, std::size_t{1} << 20U)) {
        if (const auto* artifacts = object->if_contains("artifacts");
            artifacts != nullptr && artifacts->is_array()) {
            for (const auto& entry : artifacts->get_array()) {
                const auto* name = entry.is_object() ? entry.get_object().if_contains("name") : nullptr;
                const auto* digest = entry.is_object() ? entry.get_object().if_contains("sha256") : nullptr;
                if (name != nullptr && name->is_string() && digest != nullptr && digest->is_string()) {
                    subjects.push_back(subject_of(name->get_string(), digest->get_string()));
                }
            }
        }
    }
    subjects.push_back(subject_of(contracts::receipt_artifact_name, contracts::sha256_hex(receipt)));
}

} // namespace

json::object make_statement(const statement_inputs& in) {
    const auto& record = in.record;
    json::array subjects;
    add_artifacts(subjects, record.receipt);
    json::value executed = nullptr;
    json::object predicate;
    predicate["ending"] = record.ending;
    if (!record.executed_line.empty()) {
        if (auto sent = contracts::parse_object(record.executed_line, std::size_t{64} << 20U)) {
            sent->erase("token"); // a secret of the orchestrator's: its digest is in `trial`
            if (const auto* frame = sent->if_contains("stdout"); frame != nullptr && frame->is_string()) {
                subjects.push_back(
                    subject_of(frame_subject_name, contracts::sha256_hex(frame->get_string())));
            }
            executed = std::move(*sent);
        }
    }
    predicate["executed"] = std::move(executed);
    if (!record.executed_line.empty()) {
        predicate["executedSha256"] = contracts::sha256_hex(record.executed_line);
    }
    predicate["trial"] = {{"tokenSha256", in.token_sha256}, {"instructionSha256", in.instruction_sha256}};
    predicate["relay"] = {{"version", in.relay_version}, {"sha256", in.relay_sha256}};
    predicate["helper"] = {{"version", record.helper_version}, {"sha256", in.environment.helper_sha256}};
    json::object environment{{"backend", in.environment.backend}};
    for (const auto& [key, value] :
         {std::pair{"containerId", &in.environment.container_id},
          std::pair{"imageId", &in.environment.image_id}, std::pair{"engine", &in.environment.engine}}) {
        if (!value->empty()) {
            environment[key] = *value;
        }
    }
    predicate["environment"] = std::move(environment);
    predicate["subject"] = {{"argvSha256", record.argv_sha256},
                            {"uid", record.uid},
                            {"gid", record.gid},
                            {"user", record.user},
                            {"cwd", record.cwd},
                            {"environment", names_of(record.environment_names)},
                            {"credentials", names_of(record.credential_names)}};
    predicate["startedOn"] = record.started_on;
    predicate["finishedOn"] = record.finished_on;
    if (in.usage) {
        predicate["usage"] = contracts::to_json(*in.usage);
    }
    predicate["teardownBudgetMs"] = in.teardown_budget_ms;
    return {{"_type", statement_type},
            {"subject", std::move(subjects)},
            {"predicateType", predicate_type},
            {"predicate", std::move(predicate)}};
}

} // namespace maka_eval::relay
