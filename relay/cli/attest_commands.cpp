// keygen, verify, and signing a trial's result (see attest_commands.hpp).
#include "relay/cli/attest_commands.hpp"

#include "contracts/digest.hpp"
#include "contracts/wire_json.hpp"
#include "posix/io.hpp"
#include "relay/attest/statement.hpp"
#include "relay/attest/verification.hpp"
#include "relay/backends/install_record.hpp"
#include "relay/cli/commands.hpp"
#include "relay/support/background_work.hpp"
#include "relay/support/exit_codes.hpp"

#include <iostream>

#include <openssl/crypto.h>

#ifndef MAKA_EVAL_VERSION
#define MAKA_EVAL_VERSION "0.0.0"
#endif

namespace maka_eval::relay {

namespace {

constexpr std::string_view keygen_usage =
    "usage: maka-eval-relay keygen --out PREFIX\n"
    "  makes an Ed25519 key pair for signed results: PREFIX.key (the private key, PKCS#8 PEM, mode 0600) "
    "and\n"
    "  PREFIX.pub (the public key, PEM); never overwrites either. Prints the key id (the SHA-256 of the\n"
    "  public key's DER), which every envelope signed with it names.\n";
constexpr std::string_view verify_usage =
    "usage: maka-eval-relay verify --key PUB.pem [--artifacts DIR] [--json] ENVELOPE\n"
    "  checks a signed trial result offline: the DSSE signature with the public key, the statement's shape\n"
    "  and predicate version, and with --artifacts every file it lists by SHA-256 (and none unlisted).\n"
    "  Exit 0 and what was attested (--json: the statement); exit 1 and the first mismatch, named.\n";

int usage_error(std::string_view usage, const std::string& message) {
    std::cerr << "maka-eval-relay: " << message << "\n" << usage;
    return exit_usage;
}

// A signed trial's first EVP call starts OpenSSL, and on OpenSSL 3.0 most of that start is work signing
// never uses (callgrind over the key's load, 7.0 M instructions): reading openssl.cnf (1.8 M), copying every
// legacy cipher and digest name into the provider name map (3.2 M, namemap.c's "pilfering"), and loading
// the text of every error (1.0 M; no signing error prints OpenSSL's). Ed25519 is fetched from the default
// provider by its own name and needs none of them. They may serve TLS (the configuration's system policy,
// legacy names for encrypted PEM, the handshake's error text), so they are left out only when this process
// speaks no TLS: a docker engine reached over TLS starts OpenSSL as usual.
void lighter_openssl_unless_tls(const common_options& options) {
    if (options.backend == backend_kind::docker && options.engine.transport == engine_transport::tls) {
        return;
    }
    (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                                  OPENSSL_INIT_NO_ADD_ALL_DIGESTS | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS,
                              nullptr);
}

} // namespace

int keygen_command(std::span<const std::string_view> args) {
    if (wants_help(args)) {
        std::cout << keygen_usage;
        return exit_success;
    }
    if (args.size() != 2 || args[0] != "--out" || args[1].empty()) {
        return usage_error(keygen_usage, "keygen takes --out PREFIX");
    }
    const std::string prefix(args[1]);
    auto made = generate_key_pair(prefix);
    if (!made) {
        std::cerr << "maka-eval-relay: keygen: " << made.error().message << "\n";
        return exit_environment;
    }
    std::cout << "key id      " << *made << "\nprivate key " << prefix << ".key (0600: give it to the relay "
              << "with --sign-key, to no one else)\npublic key  " << prefix << ".pub (for verify)\n";
    return exit_success;
}

int verify_command(std::span<const std::string_view> args) {
    if (wants_help(args)) {
        std::cout << verify_usage;
        return exit_success;
    }
    std::string key_path;
    std::optional<std::string> artifacts;
    std::string envelope_path;
    bool json = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--key" && i + 1 < args.size()) {
            key_path = args[++i];
        } else if (args[i] == "--artifacts" && i + 1 < args.size()) {
            artifacts = std::string(args[++i]);
        } else if (args[i] == "--json") {
            json = true;
        } else if (!args[i].starts_with("-") && envelope_path.empty()) {
            envelope_path = args[i];
        } else {
            return usage_error(verify_usage, "unknown or incomplete option " + std::string(args[i]));
        }
    }
    if (key_path.empty() || envelope_path.empty()) {
        return usage_error(verify_usage, "verify needs --key PUB.pem and the envelope's file");
    }
    auto key = verifying_key::load(key_path);
    if (!key) {
        return usage_error(verify_usage, key.error().message);
    }
    auto text = posix::read_file(envelope_path, std::size_t{64} << 20U);
    if (!text) {
        std::cerr << "maka-eval-relay: verify: " << envelope_path << ": " << text.error().message() << "\n";
        return exit_internal;
    }
    auto verified = verify_attestation(*text, *key, artifacts);
    if (!verified) {
        std::cerr << "maka-eval-relay: verify: " << envelope_path << ": " << verified.error().message << "\n";
        return exit_internal;
    }
    if (json) {
        std::cout << contracts::to_wire(verified->statement) << "\n";
    } else {
        std::cout << describe(*verified);
    }
    return exit_success;
}

boost::system::result<std::optional<trial_signer>, attestation_error>
trial_signer::from(const common_options& options) {
    if (options.sign_key_file.empty()) {
        return std::optional<trial_signer>();
    }
    if (!options.attestation_path.empty()) {
        if (auto checked = check_attestation_path(options.attestation_path); !checked) {
            return checked.error();
        }
    }
    auto text = read_private_key(options.sign_key_file, "--sign-key");
    if (!text) {
        return text.error();
    }
    std::optional<trial_signer> signer(trial_signer(options.attestation_path));
    lighter_openssl_unless_tls(options);
    signer->key_ = in_background([pem = std::move(*text)] { return signing_key::parse(pem); });
    // The relay's own digest, remembered per binary where relays keep their record (an unstripped build is
    // tens of megabytes): hashed on a thread of its own only when this binary is new.
    std::optional<std::string> known;
    struct stat info {};
    if (::stat("/proc/self/exe", &info) == 0) {
        signer->relay_file_ = info;
        known = install_record().remembered_digest(info, install_record::relay_digest_memo);
    }
    signer->relay_digest_known_ = known.has_value();
    signer->relay_digest_.emplace(std::move(known));
    return signer;
}

std::string trial_signer::relay_digest() {
    std::string digest = relay_digest_ ? relay_digest_->get() : std::string();
    if (!relay_digest_known_ && relay_file_ && !digest.empty()) {
        install_record().remember_digest(*relay_file_, digest, install_record::relay_digest_memo);
    }
    return digest;
}

boost::system::result<std::string, attestation_error>
trial_signer::sign(const trial_config& config, const trial_outcome& outcome, const backend& env) {
    const auto facts = env.facts();
    const statement_inputs inputs{outcome.record,
                                  facts,
                                  outcome.usage,
                                  config.teardown_budget.count(),
                                  MAKA_EVAL_VERSION,
                                  relay_digest(),
                                  contracts::sha256_hex(config.token),
                                  contracts::sha256_hex(config.instruction)};
    auto key = key_.get();
    if (!key) {
        return key.error();
    }
    auto line = sign_statement(*key, make_statement(inputs));
    if (!line) {
        return line.error();
    }
    if (!path_.empty()) {
        if (auto written = write_attestation(path_, *line); !written) {
            return written.error();
        }
    }
    return line;
}

} // namespace maka_eval::relay
