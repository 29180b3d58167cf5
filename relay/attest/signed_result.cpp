// Signing and writing a trial's attestation (see signed_result.hpp).
#include "relay/attest/signed_result.hpp"

#include "contracts/wire_json.hpp"
#include "posix/io.hpp"
#include "relay/attest/dsse.hpp"
#include "relay/support/background_work.hpp"
#include "relay/support/private_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::relay {

namespace {

std::string directory_of(const std::string& path) {
    const auto parent = std::filesystem::path(path).parent_path();
    return parent.empty() ? std::string(".") : parent.string();
}

} // namespace

own_binary_digest::own_binary_digest(std::optional<std::string> known) {
    if (known) {
        std::promise<std::string> ready;
        ready.set_value(std::move(*known));
        digest_ = ready.get_future();
    } else {
        digest_ = in_background([] { return file_sha256("/proc/self/exe").value_or(std::string()); });
    }
}

std::string own_binary_digest::get() {
    return digest_.valid() ? digest_.get() : std::string();
}

boost::system::result<std::string, attestation_error> sign_statement(const signing_key& key,
                                                                     const boost::json::object& statement) {
    dsse_envelope envelope{
        std::string(in_toto_payload_type), contracts::to_wire(statement), key.key_id(), {}};
    auto signature = key.sign(pre_authentication_encoding(envelope.payload_type, envelope.payload));
    if (!signature) {
        return signature.error();
    }
    envelope.signature = std::move(*signature);
    return to_line(envelope);
}

boost::system::result<void, attestation_error> check_attestation_path(const std::string& path) {
    struct stat info {};
    const std::string directory = directory_of(path);
    if (::stat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
        return attestation_error{attestation_fault::write, "--attestation " + path + ": the directory " +
                                                               directory + " does not exist"};
    }
    if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
        return attestation_error{attestation_fault::write, "--attestation " + path + ": not a regular file"};
    }
    return {};
}

boost::system::result<void, attestation_error> write_attestation(const std::string& path,
                                                                 std::string_view line) {
    std::string temporary = directory_of(path) + "/.maka-eval-attestation-XXXXXX";
    posix::unique_fd fd(::mkostemp(temporary.data(), O_CLOEXEC)); // created 0600
    const auto failed = [&](const std::string& why) {
        if (fd) {
            (void)::unlink(temporary.c_str());
        }
        return attestation_error{attestation_fault::write, "--attestation " + path + ": " + why};
    };
    if (!fd) {
        return failed(std::strerror(errno));
    }
    const std::string text = std::string(line) + "\n";
    // No fsync: the rename makes it whole for any reader; surviving a power cut as well would cost every
    // signed trial a journal commit (milliseconds), past signing's budget of one.
    if (!posix::write_all(fd.get(), text) || ::rename(temporary.c_str(), path.c_str()) != 0) {
        return failed(std::strerror(errno));
    }
    return {};
}

} // namespace maka_eval::relay
