// Ed25519 keys over OpenSSL 3's EVP interface (see signing_key.hpp).
#include "relay/attest/signing_key.hpp"

#include "contracts/digest.hpp"
#include "contracts/secret.hpp"
#include "posix/io.hpp"
#include "relay/support/private_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace maka_eval::relay {

void detail::pkey_free::operator()(void* key) const noexcept {
    EVP_PKEY_free(static_cast<EVP_PKEY*>(key));
}

namespace {

struct bio_free {
    void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
using bio_ptr = std::unique_ptr<BIO, bio_free>;
struct md_ctx_free {
    void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, md_ctx_free>;

// A PEM file's text is at most a few hundred bytes; anything far larger is not a key.
constexpr std::size_t key_file_limit = std::size_t{64} * 1024;

EVP_PKEY* raw(const detail::pkey_ptr& key) {
    return static_cast<EVP_PKEY*>(key.get());
}

// The key id: lowercase hex SHA-256 of the public key's DER (SubjectPublicKeyInfo). The DER is made by
// OpenSSL's ASN.1 templates from the raw key: i2d_PUBKEY would set up an encoder context for it, a third of a
// key's whole load (callgrind: 3.3 M of 15 M instructions).
std::string key_id_of(EVP_PKEY* key) {
    unsigned char raw_key[32];
    std::size_t size = sizeof raw_key;
    if (EVP_PKEY_get_raw_public_key(key, raw_key, &size) != 1 || size != sizeof raw_key) {
        return {};
    }
    std::unique_ptr<X509_PUBKEY, decltype(&X509_PUBKEY_free)> info(X509_PUBKEY_new(), X509_PUBKEY_free);
    auto* copy = static_cast<unsigned char*>(OPENSSL_memdup(raw_key, size));
    if (!info || copy == nullptr ||
        X509_PUBKEY_set0_param(info.get(), OBJ_nid2obj(NID_ED25519), V_ASN1_UNDEF, nullptr, copy,
                               static_cast<int>(size)) != 1) {
        OPENSSL_free(copy);
        return {};
    }
    unsigned char* der = nullptr;
    const int der_size = i2d_X509_PUBKEY(info.get(), &der);
    if (der_size <= 0) {
        return {};
    }
    std::string id = contracts::sha256_hex(
        std::string_view(reinterpret_cast<const char*>(der), static_cast<std::size_t>(der_size)));
    OPENSSL_free(der);
    return id;
}

// An Ed25519 private key from PKCS#8 PEM. Not PEM_read_bio_PrivateKey: that sets up a decoder context over
// every provider's decoders, more than half of a key's whole load (callgrind: 8.8 M of 15 M instructions),
// where an Ed25519 PKCS#8 is one ASN.1 structure holding a 32-byte seed (RFC 8410, section 7).
EVP_PKEY* read_ed25519_private_key(BIO* bio) {
    std::unique_ptr<PKCS8_PRIV_KEY_INFO, decltype(&PKCS8_PRIV_KEY_INFO_free)> info(
        PEM_read_bio_PKCS8_PRIV_KEY_INFO(bio, nullptr, nullptr, nullptr), PKCS8_PRIV_KEY_INFO_free);
    const ASN1_OBJECT* algorithm = nullptr;
    const unsigned char* der = nullptr;
    int size = 0;
    if (!info || PKCS8_pkey_get0(&algorithm, &der, &size, nullptr, info.get()) != 1 ||
        OBJ_obj2nid(algorithm) != NID_ED25519) {
        return nullptr;
    }
    // ASN1_STRING_clear_free cleanses the seed's copy; the PKCS#8 structure cleanses its own when freed.
    std::unique_ptr<ASN1_OCTET_STRING, decltype(&ASN1_STRING_clear_free)> seed(
        d2i_ASN1_OCTET_STRING(nullptr, &der, size), ASN1_STRING_clear_free);
    if (!seed) {
        return nullptr;
    }
    return EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, ASN1_STRING_get0_data(seed.get()),
                                        static_cast<std::size_t>(ASN1_STRING_length(seed.get())));
}

bool is_ed25519(EVP_PKEY* key) {
    return key != nullptr && EVP_PKEY_is_a(key, "ED25519") == 1;
}

std::string errno_text() {
    return std::strerror(errno);
}

// Writes `text` to a new file `path` (never over an existing one) with `mode`.
boost::system::result<void, attestation_error> create_file(const std::string& path, std::string_view text,
                                                           unsigned mode) {
    posix::unique_fd fd(posix::open_retry(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode));
    if (!fd) {
        return attestation_error{
            attestation_fault::write,
            path + ": " +
                (errno == EEXIST ? "exists already (keygen never overwrites a key)" : errno_text())};
    }
    if (::fchmod(fd.get(), mode) != 0 || !posix::write_all(fd.get(), text) || ::fsync(fd.get()) != 0) {
        const std::string why = errno_text();
        (void)::unlink(path.c_str());
        return attestation_error{attestation_fault::write, path + ": " + why};
    }
    return {};
}

} // namespace

boost::system::result<private_key_text, attestation_error> read_private_key(const std::string& path,
                                                                            std::string_view what) {
    const std::string named = std::string(what) + " " + path;
    // From here the process may hold a private key: no core file, and no ptrace by another process of its
    // user (set before the read, so that no moment holds the key in a dumpable process).
    (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    auto read = read_private_file(path, key_file_limit);
    if (!read) {
        const auto& why = read.error();
        std::string text = named;
        switch (why.fault) {
        case private_file_fault::unopenable:
        case private_file_fault::unreadable:
            text += ": " + why.error.message();
            break;
        case private_file_fault::not_regular:
            text += ": not a regular file";
            break;
        case private_file_fault::not_ours:
            text += ": owned by uid " + std::to_string(why.info.st_uid) + ", not by the relay's user (uid " +
                    std::to_string(::geteuid()) + ")";
            break;
        case private_file_fault::shared: {
            char mode[8];
            (void)std::snprintf(mode, sizeof mode, "%04o", why.info.st_mode & 07777U);
            text += std::string(": readable or writable by group or others (mode ") + mode +
                    "); a private key must be the relay user's alone: chmod 600 " + path;
            break;
        }
        }
        return attestation_error{attestation_fault::key_file, std::move(text)};
    }
    private_key_text out{named, contracts::secret_text(std::move(*read))};
    if (out.pem.view().find("-----BEGIN PRIVATE KEY-----") == std::string_view::npos) {
        return attestation_error{attestation_fault::key_format,
                                 named + ": not a private key in PEM (PKCS#8, as keygen writes)"};
    }
    return out;
}

boost::system::result<signing_key, attestation_error> signing_key::parse(const private_key_text& text) {
    bio_ptr bio(BIO_new_mem_buf(text.pem.view().data(), static_cast<int>(text.pem.view().size())));
    EVP_PKEY* key = bio ? read_ed25519_private_key(bio.get()) : nullptr;
    signing_key out;
    out.key_.reset(key);
    if (!is_ed25519(key)) {
        return attestation_error{attestation_fault::key_format,
                                 text.named +
                                     ": not an Ed25519 private key in PEM (PKCS#8, as keygen writes)"};
    }
    out.key_id_ = key_id_of(key);
    // No trial signature here to warm OpenSSL up: once the key is loaded, a first signature costs what a
    // second does (callgrind: 0.71 M instructions against 0.64 M), so it only added its own CPU to the trial.
    return out;
}

boost::system::result<signing_key, attestation_error> signing_key::load(const std::string& path,
                                                                        std::string_view what) {
    auto text = read_private_key(path, what);
    if (!text) {
        return text.error();
    }
    return parse(*text);
}

boost::system::result<std::string, attestation_error> signing_key::sign(std::string_view message) const {
    md_ctx_ptr ctx(EVP_MD_CTX_new());
    std::string signature(64, '\0');
    std::size_t size = signature.size();
    // Ed25519 hashes the message itself: no digest is named, and it is signed in one call.
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, raw(key_)) != 1 ||
        EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
        return attestation_error{attestation_fault::crypto, "OpenSSL could not sign with the Ed25519 key"};
    }
    signature.resize(size);
    return signature;
}

boost::system::result<verifying_key, attestation_error> verifying_key::load(const std::string& path) {
    auto text = posix::read_file(path, key_file_limit);
    if (!text) {
        return attestation_error{attestation_fault::key_file,
                                 "--key " + path + ": " + text.error().message()};
    }
    contracts::secret_text pem(std::move(*text)); // it may be a private key's file
    bio_ptr bio(BIO_new_mem_buf(pem.view().data(), static_cast<int>(pem.view().size())));
    EVP_PKEY* key = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr;
    if (key == nullptr && bio) {
        (void)BIO_reset(bio.get());
        key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
    }
    verifying_key out;
    out.key_.reset(key);
    if (!is_ed25519(key)) {
        return attestation_error{attestation_fault::key_format,
                                 "--key " + path + ": not an Ed25519 public key in PEM (as keygen's .pub)"};
    }
    out.key_id_ = key_id_of(key);
    return out;
}

bool verifying_key::verify(std::string_view message, std::string_view signature) const {
    md_ctx_ptr ctx(EVP_MD_CTX_new());
    return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, raw(key_)) == 1 &&
           EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                            signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                            message.size()) == 1;
}

boost::system::result<std::string, attestation_error> generate_key_pair(const std::string& prefix) {
    for (const auto* suffix : {".key", ".pub"}) { // both checked before either is written
        struct stat info {};
        if (::lstat((prefix + suffix).c_str(), &info) == 0) {
            return attestation_error{attestation_fault::write,
                                     prefix + suffix + ": exists already (keygen never overwrites a key)"};
        }
    }
    detail::pkey_ptr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
    if (!key) {
        return attestation_error{attestation_fault::crypto, "OpenSSL could not make an Ed25519 key"};
    }
    // The private PEM goes through OpenSSL's secure heap where it has one (cleansed when freed).
    bio_ptr secret(BIO_new(BIO_s_secmem()));
    bio_ptr open(BIO_new(BIO_s_mem()));
    if (!secret || !open ||
        PEM_write_bio_PrivateKey(secret.get(), raw(key), nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
        PEM_write_bio_PUBKEY(open.get(), raw(key)) != 1) {
        return attestation_error{attestation_fault::crypto, "OpenSSL could not write the key as PEM"};
    }
    char* data = nullptr;
    const long secret_size = BIO_get_mem_data(secret.get(), &data);
    const std::string_view private_pem(data, static_cast<std::size_t>(secret_size));
    if (auto made = create_file(prefix + ".key", private_pem, 0600); !made) {
        return made.error();
    }
    const long open_size = BIO_get_mem_data(open.get(), &data);
    if (auto made =
            create_file(prefix + ".pub", std::string_view(data, static_cast<std::size_t>(open_size)), 0644);
        !made) {
        return made.error();
    }
    return key_id_of(raw(key));
}

} // namespace maka_eval::relay
