// The relay's Ed25519 keys: made by `keygen`, the private one loaded for `--sign-key`, the public one for
// `verify`. OpenSSL 3's EVP interface only: Ed25519 is signed one-shot (EVP_DigestSign with no digest).
//
// The private key file is refused unless it is a regular file owned by the relay's user and readable by no
// one else; once one is loaded the relay is made non-dumpable (no core file, no ptrace by its own user), and
// the PEM text read is wiped. The key id is the lowercase hex SHA-256 of the public key's DER
// (SubjectPublicKeyInfo): the same for the private key and the .pub written beside it.
#pragma once

#include "contracts/secret.hpp"
#include "relay/attest/attestation_error.hpp"

#include <memory>
#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

namespace detail {
struct pkey_free {
    void operator()(void* key) const noexcept;
};
using pkey_ptr = std::unique_ptr<void, pkey_free>; // an EVP_PKEY*, kept out of this header
} // namespace detail

// A private key file's text, read under the rules above (and the process made non-dumpable first), its
// PEM armour checked; wiped when dropped. Cheap: what OpenSSL does with it (parse_key) is not.
struct private_key_text {
    std::string named; // "--sign-key FILE", for errors
    contracts::secret_text pem;
};
boost::system::result<private_key_text, attestation_error> read_private_key(const std::string& path,
                                                                            std::string_view what);

class signing_key {
  public:
    // Reads `path` under the rules above; `what` names the option it came from in errors ("--sign-key").
    static boost::system::result<signing_key, attestation_error> load(const std::string& path,
                                                                      std::string_view what);
    // The key in a file read by read_private_key. OpenSSL's decoders and providers take milliseconds to
    // start: a relay may do this on a thread of its own while the trial begins.
    static boost::system::result<signing_key, attestation_error> parse(const private_key_text& text);
    [[nodiscard]] const std::string& key_id() const { return key_id_; }
    // The raw 64-byte Ed25519 signature of `message`.
    [[nodiscard]] boost::system::result<std::string, attestation_error> sign(std::string_view message) const;

  private:
    detail::pkey_ptr key_;
    std::string key_id_;
};

class verifying_key {
  public:
    // A PEM public key (SubjectPublicKeyInfo); a private key's file is accepted too (its public half).
    static boost::system::result<verifying_key, attestation_error> load(const std::string& path);
    [[nodiscard]] const std::string& key_id() const { return key_id_; }
    [[nodiscard]] bool verify(std::string_view message, std::string_view signature) const;

  private:
    detail::pkey_ptr key_;
    std::string key_id_;
};

// `keygen --out PREFIX`: PREFIX.key (PKCS#8 PEM, created 0600, never over an existing file) and PREFIX.pub
// (SubjectPublicKeyInfo PEM, 0644). Returns the key id.
boost::system::result<std::string, attestation_error> generate_key_pair(const std::string& prefix);

} // namespace maka_eval::relay
