// Signed results: DSSE's PAE against the specification's vector, keys (keygen's files, the private key
// file's rules), and verification refusing every tampering by its cause. The statement is built from a
// trial record as the relay fills it and checked against contracts/schema/attestation-statement.schema.json.
#include "contracts/digest.hpp"
#include "contracts/json_schema.hpp"
#include "contracts/python_text.hpp"
#include "contracts/wire_json.hpp"
#include "posix/io.hpp"
#include "relay/attest/dsse.hpp"
#include "relay/attest/signed_result.hpp"
#include "relay/attest/signing_key.hpp"
#include "relay/attest/statement.hpp"
#include "relay/attest/verification.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace {

using namespace maka_eval::relay;
namespace fs = std::filesystem;
namespace json = boost::json;

struct scratch {
    scratch() {
        std::string pattern = (fs::temp_directory_path() / "maka-attest-XXXXXX").string();
        dir = ::mkdtemp(pattern.data());
    }
    scratch(const scratch&) = delete;
    scratch& operator=(const scratch&) = delete;
    ~scratch() { fs::remove_all(dir); }
    [[nodiscard]] std::string at(const std::string& name) const { return (dir / name).string(); }
    fs::path dir;
};

void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A private key of another algorithm, as PKCS#8 PEM (what `openssl genpkey` writes), with mode 0600.
void write_foreign_key(const std::string& path, EVP_PKEY* key) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    write(path, std::string(data, static_cast<std::size_t>(size)));
    ::chmod(path.c_str(), 0600);
    EVP_PKEY_free(key);
}

// A trial as the relay records one: a receipt of three artifacts, `executed` with a frame.
struct signed_trial {
    scratch files;
    std::string key_id;
    std::string envelope;
    std::string artifacts;

    explicit signed_trial(const std::string& predicate_override = {}) {
        key_id = generate_key_pair(files.at("k")).value();
        artifacts = files.at("artifacts");
        fs::create_directory(artifacts);
        std::string receipt = R"({"kind":"receipt","version":1,"artifacts":[)";
        bool first = true;
        for (const auto* name :
             {"maka-subject.stdout.txt", "maka-subject.stderr.txt", "maka-subject.usage.json"}) {
            const std::string text = std::string("contents of ") + name;
            write(artifacts + "/" + name, text);
            receipt += std::string(first ? "" : ",") + R"({"name":")" + name + R"(","bytes":)" +
                       std::to_string(text.size()) + R"(,"sha256":")" +
                       maka_eval::contracts::sha256_hex(text) + R"(","complete":true,"masked":0})";
            first = false;
        }
        receipt += "]}\n";
        write(artifacts + "/maka-subject.receipt.json", receipt);
        trial_record record;
        record.started_on = "2026-12-07T04:05:06.789Z";
        record.finished_on = "2026-12-07T04:05:07.001Z";
        record.executed_line =
            R"({"kind":"executed","token":"secret-token","termination":"exited","exitCode":0,)"
            R"("stdout":"{\"score\":1}","diagnostic":{"category":"none"}})"
            "\n";
        record.ending = "completed";
        record.helper_version = "0.1.0";
        record.uid = 1000;
        record.gid = 1000;
        record.cwd = "/workspace";
        record.argv_sha256 = maka_eval::contracts::sha256_hex(R"(["agent"])");
        record.environment_names = {"MODE"};
        record.credential_names = {"API_KEY"};
        record.receipt = receipt;
        const environment_facts facts{"docker", "c0ffee", "sha256:abc", "unix:///var/run/docker.sock",
                                      std::string(64, 'a')};
        const std::optional<maka_eval::contracts::subject_usage> usage;
        auto statement = make_statement({record, facts, usage, 110000, "0.1.0", std::string(64, 'b'),
                                         maka_eval::contracts::sha256_hex("secret-token"),
                                         maka_eval::contracts::sha256_hex("do the task")});
        if (!predicate_override.empty()) {
            statement["predicateType"] = predicate_override;
        }
        auto key = signing_key::load(files.at("k.key"), "--sign-key").value();
        envelope = sign_statement(key, statement).value();
    }

    [[nodiscard]] boost::system::result<verified_result, attestation_error>
    verify(const std::string& text, bool with_artifacts) const {
        const auto key = verifying_key::load(files.at("k.pub")).value();
        return verify_attestation(text, key, with_artifacts ? std::optional(artifacts) : std::nullopt);
    }
};

// The envelope with one field's value replaced (JSON re-serialized).
std::string with_field(const std::string& envelope, const std::string& key, const std::string& value) {
    auto object = maka_eval::contracts::parse_object(envelope, 1U << 24U).value();
    if (key == "sig") {
        object["signatures"].as_array()[0].as_object()["sig"] = json::string(value);
    } else {
        object[key] = json::string(value);
    }
    return maka_eval::contracts::to_wire(object);
}

TEST_CASE("PAE is the DSSE specification's, byte for byte (its test vector)") {
    CHECK(pre_authentication_encoding("http://example.com/HelloWorld", "hello world") ==
          "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
    CHECK(pre_authentication_encoding("", "") == "DSSEv1 0  0 ");
}

TEST_CASE("keygen writes a 0600 private key and a public key with one key id, and never overwrites") {
    scratch files;
    const auto id = generate_key_pair(files.at("k"));
    REQUIRE(id.has_value());
    struct stat info {};
    REQUIRE(::stat(files.at("k.key").c_str(), &info) == 0);
    CHECK((info.st_mode & 0777U) == 0600U);
    CHECK(read(files.at("k.key")).starts_with("-----BEGIN PRIVATE KEY-----"));
    CHECK(read(files.at("k.pub")).starts_with("-----BEGIN PUBLIC KEY-----"));
    CHECK(signing_key::load(files.at("k.key"), "--sign-key").value().key_id() == *id);
    CHECK(::prctl(PR_GET_DUMPABLE) == 0); // a process holding the key leaves no core file
    CHECK(verifying_key::load(files.at("k.pub")).value().key_id() == *id);
    CHECK(id->size() == 64);
    // The key id is the SHA-256 of the DER OpenSSL's own encoder gives the public key.
    {
        std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(files.at("k.pub").c_str(), "r"), BIO_free);
        std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pub(
            PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
        unsigned char* der = nullptr;
        const int size = i2d_PUBKEY(pub.get(), &der);
        REQUIRE(size == 44); // RFC 8410: 12 bytes of algorithm and framing, 32 of key
        CHECK(maka_eval::contracts::sha256_hex(
                  std::string_view(reinterpret_cast<char*>(der), static_cast<std::size_t>(size))) == *id);
        OPENSSL_free(der);
    }
    const std::string before = read(files.at("k.key"));
    const auto again = generate_key_pair(files.at("k"));
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().message.find("exists already") != std::string::npos);
    CHECK(read(files.at("k.key")) == before);
}

TEST_CASE("a private key file readable by others, not a file, not ours, or not Ed25519 is refused") {
    scratch files;
    (void)generate_key_pair(files.at("k")).value();
    ::chmod(files.at("k.key").c_str(), 0640);
    auto loaded = signing_key::load(files.at("k.key"), "--sign-key");
    REQUIRE_FALSE(loaded.has_value());
    CHECK(loaded.error().fault == attestation_fault::key_file);
    CHECK(loaded.error().message.find("mode 0640") != std::string::npos);
    CHECK(loaded.error().message.find("chmod 600") != std::string::npos);
    ::chmod(files.at("k.key").c_str(), 0600);
    CHECK(signing_key::load(files.at("k.key"), "--sign-key").has_value());
    CHECK(signing_key::load(files.dir.string(), "--sign-key").error().message.find("not a regular file") !=
          std::string::npos);
    CHECK(signing_key::load(files.at("missing"), "--sign-key").error().fault == attestation_fault::key_file);
    write(files.at("rsa.key"), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    ::chmod(files.at("rsa.key").c_str(), 0600);
    CHECK(signing_key::load(files.at("rsa.key"), "--sign-key").error().fault ==
          attestation_fault::key_format);
    // Real keys of other algorithms, X25519 (the same curve, for key agreement) among them.
    write_foreign_key(files.at("ec.key"), EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
    write_foreign_key(files.at("x25519.key"), EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
    for (const auto* name : {"ec.key", "x25519.key"}) {
        const auto foreign = signing_key::load(files.at(name), "--sign-key");
        REQUIRE_FALSE(foreign.has_value());
        CHECK(foreign.error().fault == attestation_fault::key_format);
        CHECK(foreign.error().message.find("not an Ed25519 private key") != std::string::npos);
    }
    if (::geteuid() == 0) {
        ::chown(files.at("k.key").c_str(), 65534, 65534);
        const auto theirs = signing_key::load(files.at("k.key"), "--sign-key");
        REQUIRE_FALSE(theirs.has_value());
        CHECK(theirs.error().message.find("owned by uid 65534") != std::string::npos);
    }
}

TEST_CASE("the statement lists the receipt's artifacts, the receipt and the frame, and holds no secret") {
    const signed_trial trial;
    const auto envelope = parse_envelope(trial.envelope).value();
    CHECK(envelope.payload_type == "application/vnd.in-toto+json");
    CHECK(envelope.keyid == trial.key_id);
    CHECK(envelope.payload.find("secret-token") == std::string::npos);
    CHECK(envelope.payload.find("do the task") == std::string::npos);
    const auto statement = maka_eval::contracts::parse_object(envelope.payload, 1U << 24U).value();
    const auto schema_text = std::string(statement_schema_text());
    const auto schema = maka_eval::contracts::parse_object(schema_text, 1U << 20U).value();
    CHECK(maka_eval::contracts::schema_violation(schema, statement).empty());
    const auto& subjects = statement.at("subject").as_array();
    REQUIRE(subjects.size() == 5);
    CHECK(subjects[3].at("name") == "maka-subject.receipt.json");
    CHECK(subjects[4].at("name") == "result-frame");
    CHECK(subjects[4].at("digest").at("sha256").as_string() ==
          maka_eval::contracts::sha256_hex(R"({"score":1})"));
    const auto& predicate = statement.at("predicate").as_object();
    CHECK_FALSE(predicate.at("executed").as_object().contains("token"));
    CHECK(predicate.at("trial").at("tokenSha256").as_string() ==
          maka_eval::contracts::sha256_hex("secret-token"));
    CHECK(predicate.at("subject").at("credentials").as_array()[0] == "API_KEY");
    // The schema holds the statement to its shape: one wrong type is named by its path.
    auto broken = statement;
    broken["predicate"].as_object()["subject"].as_object()["uid"] = "root";
    CHECK(maka_eval::contracts::schema_violation(schema, broken) == "predicate.subject.uid: not integer");
}

TEST_CASE("verify accepts the envelope and the artifacts as signed") {
    const signed_trial trial;
    const auto verified = trial.verify(trial.envelope, true);
    REQUIRE(verified.has_value());
    CHECK(verified->artifacts_checked == 4);
    CHECK(describe(*verified).find("ended completed") != std::string::npos);
}

TEST_CASE("verify refuses every tampering, naming what does not match") {
    const signed_trial trial;
    const auto refused = [&](const std::string& text, attestation_fault fault, const std::string& says,
                             bool with_artifacts = false) {
        const auto verified = trial.verify(text, with_artifacts);
        REQUIRE_FALSE(verified.has_value());
        CHECK(verified.error().fault == fault);
        CHECK(verified.error().message.find(says) != std::string::npos);
        return verified.error().message;
    };
    const auto envelope = parse_envelope(trial.envelope).value();
    SUBCASE("a changed byte of the payload") {
        auto payload = envelope.payload;
        payload[payload.find("completed")] = 'C';
        refused(with_field(trial.envelope, "payload", maka_eval::contracts::python::b64encode(payload)),
                attestation_fault::signature, "does not verify");
    }
    SUBCASE("a changed byte of the signature") {
        auto sig = envelope.signature;
        sig[7] = static_cast<char>(sig[7] ^ 1);
        refused(with_field(trial.envelope, "sig", maka_eval::contracts::python::b64encode(sig)),
                attestation_fault::signature, "does not verify");
    }
    SUBCASE("another payload type") {
        refused(with_field(trial.envelope, "payloadType", "application/json"), attestation_fault::signature,
                "does not verify");
    }
    SUBCASE("the wrong key") {
        scratch other;
        (void)generate_key_pair(other.at("o")).value();
        const auto key = verifying_key::load(other.at("o.pub")).value();
        const auto verified = verify_attestation(trial.envelope, key, std::nullopt);
        REQUIRE_FALSE(verified.has_value());
        CHECK(verified.error().message.find("not by the key given") != std::string::npos);
        // Without a keyid to tell, the signature itself fails.
        auto unnamed = maka_eval::contracts::parse_object(trial.envelope, 1U << 24U).value();
        unnamed["signatures"].as_array()[0].as_object().erase("keyid");
        CHECK(verify_attestation(maka_eval::contracts::to_wire(unnamed), key, std::nullopt).error().fault ==
              attestation_fault::signature);
    }
    SUBCASE("a truncated file, and one that is not JSON") {
        refused(trial.envelope.substr(0, trial.envelope.size() / 2), attestation_fault::envelope,
                "truncated?");
        refused("hello\n", attestation_fault::envelope, "not a DSSE envelope");
        refused("{}", attestation_fault::envelope, "required");
    }
    SUBCASE("an unknown predicate version, even signed by the right key") {
        const signed_trial future("urn:maka-eval:trial-result:v2");
        const auto verified = future.verify(future.envelope, false);
        REQUIRE_FALSE(verified.has_value());
        CHECK(verified.error().fault == attestation_fault::statement);
        CHECK(verified.error().message.find("v2 is not one this relay knows") != std::string::npos);
    }
    SUBCASE("a changed, a missing and an extra artifact") {
        const auto stdout_path = trial.artifacts + "/maka-subject.stdout.txt";
        const auto kept = read(stdout_path);
        write(stdout_path, kept + "x");
        refused(trial.envelope, attestation_fault::artifact, "maka-subject.stdout.txt: its SHA-256 is", true);
        fs::remove(stdout_path);
        refused(trial.envelope, attestation_fault::artifact, "signed, but not a file", true);
        write(stdout_path, kept);
        write(trial.artifacts + "/planted.txt", "x");
        refused(trial.envelope, attestation_fault::artifact, "planted.txt: in", true);
    }
}

} // namespace
