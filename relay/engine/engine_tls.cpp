// TLS to the Docker engine (see engine_tls.hpp).
#include "relay/engine/engine_tls.hpp"

#include "posix/io.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace maka_eval::relay {
namespace {

namespace ssl = boost::asio::ssl;

// A PEM file, whole; certificates and keys are small, so anything over 1 MiB is not one.
boost::system::result<std::string, relay_error> read_pem(const std::string& path, const std::string& what) {
    auto failed = [&](const std::string& why) {
        return relay_error{relay_errc::engine, "cannot read " + what + " " + path + ": " + why};
    };
    auto text = posix::read_file(path, std::size_t{1} << 20U, 0, posix::contents::secret);
    if (!text) {
        return failed(text.error() == boost::system::errc::file_too_large ? "over 1 MiB: not a PEM file"
                                                                          : text.error().message());
    }
    return std::move(*text);
}

int note_index() {
    static const int index = ::SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

std::string name_of(X509_NAME* name) {
    if (name == nullptr) {
        return {};
    }
    char text[512];
    ::X509_NAME_oneline(name, text, sizeof text);
    return text;
}

std::string time_text(const ASN1_TIME* time) {
    if (time == nullptr) {
        return {};
    }
    BIO* bio = ::BIO_new(::BIO_s_mem());
    std::string out;
    if (bio != nullptr && ::ASN1_TIME_print(bio, time) == 1) {
        char* data = nullptr;
        const long size = BIO_get_mem_data(bio, &data);
        out.assign(data, static_cast<std::size_t>(size));
    }
    ::BIO_free(bio);
    return out;
}

// Keeps OpenSSL's verdict, and notes the first certificate that failed and, for an expiry, when.
int remember_failure(int preverified, X509_STORE_CTX* store) {
    if (preverified == 1) {
        return 1;
    }
    auto* ssl =
        static_cast<SSL*>(::X509_STORE_CTX_get_ex_data(store, ::SSL_get_ex_data_X509_STORE_CTX_idx()));
    auto* note =
        ssl != nullptr ? static_cast<tls_verify_note*>(::SSL_get_ex_data(ssl, note_index())) : nullptr;
    if (note != nullptr && note->subject.empty()) {
        X509* cert = ::X509_STORE_CTX_get_current_cert(store);
        note->subject = cert != nullptr ? name_of(::X509_get_subject_name(cert)) : std::string();
        const int error = ::X509_STORE_CTX_get_error(store);
        if (cert != nullptr &&
            (error == X509_V_ERR_CERT_HAS_EXPIRED || error == X509_V_ERR_CERT_NOT_YET_VALID)) {
            note->not_after = time_text(error == X509_V_ERR_CERT_HAS_EXPIRED ? ::X509_get0_notAfter(cert)
                                                                             : ::X509_get0_notBefore(cert));
        }
    }
    return 0;
}

} // namespace

boost::system::result<std::shared_ptr<ssl::context>, relay_error>
load_engine_tls(const engine_tls_files& files) {
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    ::SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
    boost::system::error_code ec;
    auto ca = read_pem(files.ca, "the engine's CA certificate");
    if (!ca) {
        return ca.error();
    }
    context->add_certificate_authority(boost::asio::buffer(*ca), ec);
    if (ec) {
        return relay_error{relay_errc::engine,
                           files.ca + " is not a PEM CA certificate (" + ec.message() + ")"};
    }
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    if (files.cert.empty()) {
        return context;
    }
    auto cert = read_pem(files.cert, "the client certificate");
    if (!cert) {
        return cert.error();
    }
    context->use_certificate_chain(boost::asio::buffer(*cert), ec);
    if (ec) {
        return relay_error{relay_errc::engine,
                           files.cert + " is not a PEM certificate (" + ec.message() + ")"};
    }
    auto key = read_pem(files.key, "the client key");
    if (!key) {
        return key.error();
    }
    // Without a callback OpenSSL would ask for an encrypted key's passphrase on the terminal, and a relay in
    // production would wait there for ever: no passphrase, and the error says what to do.
    const bool encrypted = key->find("ENCRYPTED") != std::string::npos;
    context->set_password_callback([](std::size_t, ssl::context::password_purpose) { return std::string(); });
    context->use_private_key(boost::asio::buffer(*key), ssl::context::pem, ec);
    if (encrypted && ec) {
        ::ERR_clear_error();
        return relay_error{relay_errc::engine,
                           files.key +
                               " is encrypted: the relay (as the docker CLI) needs the key unencrypted, "
                               "readable by its user only"};
    }
    if (ec || ::SSL_CTX_check_private_key(context->native_handle()) != 1) {
        ::ERR_clear_error();
        return relay_error{relay_errc::engine, files.key + " is not the PEM private key of " + files.cert +
                                                   (ec ? " (" + ec.message() + ")" : std::string())};
    }
    return context;
}

bool expect_engine_identity(SSL* ssl, const engine_endpoint& engine, tls_verify_note& note) {
    boost::system::error_code not_address;
    (void)boost::asio::ip::make_address(engine.host, not_address);
    bool ok = ::SSL_set_ex_data(ssl, note_index(), &note) == 1;
    ::SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, &remember_failure);
    if (not_address) {
        // A name: sent as SNI, and the certificate must name it.
        // SSL_set_tlsext_host_name is a macro with a C cast; this is what it expands to.
        ok = ok &&
             ::SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                        const_cast<char*>(engine.host.c_str())) == 1 &&
             ::SSL_set1_host(ssl, engine.host.c_str()) == 1;
    } else {
        ok = ok && ::X509_VERIFY_PARAM_set1_ip_asc(::SSL_get0_param(ssl), engine.host.c_str()) == 1;
    }
    return ok;
}

void tls_session_cache::remember(SSL* ssl) {
    SSL_SESSION* current = ::SSL_get0_session(ssl);
    if (current == nullptr || ::SSL_SESSION_is_resumable(current) != 1) {
        return;
    }
    // A copy: OpenSSL marks the connection's own session not resumable when the connection is freed without a
    // TLS shutdown, which is how a finished request's connection ends here.
    SSL_SESSION* copy = ::SSL_SESSION_dup(current);
    if (copy != nullptr) {
        session_.reset(copy, &::SSL_SESSION_free);
    }
}

void tls_session_cache::resume(SSL* ssl) const {
    if (session_) {
        (void)::SSL_set_session(ssl, session_.get()); // a session it cannot use only means a full handshake
    }
}

std::string describe_tls_failure(const boost::system::error_code& ec, SSL* ssl, const tls_verify_note& note,
                                 const engine_endpoint& engine) {
    const std::string at = "the Docker engine at " + engine.url();
    const long verified = ssl != nullptr ? ::SSL_get_verify_result(ssl) : X509_V_OK;
    if (verified != X509_V_OK) {
        const std::string reason = ::X509_verify_cert_error_string(verified);
        const std::string whose = note.subject.empty() ? std::string() : " (" + note.subject + ")";
        switch (verified) {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            return at + " presented a certificate" + whose + " that expired" +
                   (note.not_after.empty() ? std::string() : " on " + note.not_after) +
                   ": the engine's certificate must be renewed";
        case X509_V_ERR_CERT_NOT_YET_VALID:
            return at + " presented a certificate" + whose + " that is not valid before " + note.not_after +
                   ": is this machine's clock right?";
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            return at + " presented a certificate" + whose + " that does not name " + engine.host +
                   ": reach the engine by a name or address its certificate lists (subjectAltName)";
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        case X509_V_ERR_CERT_SIGNATURE_FAILURE:
            return at + " is not trusted: its certificate" + whose + " is not signed by " + engine.tls.ca +
                   " (" + reason + ")";
        default:
            return at + ": its certificate" + whose + " failed verification: " + reason;
        }
    }
    if (ec.category() == boost::asio::error::get_ssl_category()) {
        switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
        case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
        case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
        case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
        case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
            if (engine.tls.cert.empty()) {
                return at + " requires a client certificate, and " + engine.tls.directory +
                       " has no cert.pem and key.pem (" + ec.message() + ")";
            }
            return at + " refused the client certificate " + engine.tls.cert + " (" + ec.message() +
                   "): it must be signed by the CA the engine trusts (its --tlscacert) and be valid now";
        case SSL_R_WRONG_VERSION_NUMBER:
        case SSL_R_PACKET_LENGTH_TOO_LONG:
        case SSL_R_HTTP_REQUEST:
            return at + " does not speak TLS there (" + ec.message() +
                   "): DOCKER_TLS_VERIFY is set, so the port must be the engine's TLS port (2376)";
        default:
            break;
        }
    }
    return at + ": TLS failed: " + ec.message();
}

} // namespace maka_eval::relay
