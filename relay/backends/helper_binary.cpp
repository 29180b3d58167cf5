// Finding the helper and naming it by its content (see helper_binary.hpp).
#include "relay/backends/helper_binary.hpp"

#include "contracts/limits.hpp"
#include "posix/executable_search.hpp"
#include "relay/backends/install_record.hpp"
#include "relay/support/environment.hpp"

#include <array>
#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::relay {

boost::system::result<std::string, relay_error> locate_helper(const std::string& configured) {
    namespace fs = std::filesystem;
    using helper_path = boost::system::result<std::string, relay_error>;
    if (!configured.empty()) {
        if (::access(configured.c_str(), X_OK) != 0) {
            return relay_error{relay_errc::environment,
                               "--helper " + configured + ": " +
                                   (errno == ENOENT ? "no such file" : "not an executable file")};
        }
        return helper_path(boost::system::in_place_value, configured);
    }
    if (const auto env = process_env(contracts::helper_path_variable.data());
        env && ::access(env->c_str(), X_OK) == 0) {
        return helper_path(boost::system::in_place_value, *env);
    }
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    for (const fs::path& candidate :
         {self.parent_path() / "maka-eval-helper",
          self.parent_path().parent_path() / "lib" / "maka-eval" / "maka-eval-helper", // installed
          self.parent_path().parent_path() / "in_container" / "maka-eval-helper"}) {   // build tree
        if (!ec && ::access(candidate.c_str(), X_OK) == 0) {
            return helper_path(boost::system::in_place_value, candidate.string());
        }
    }
    const auto path = process_env("PATH");
    if (auto found = posix::find_executable("maka-eval-helper", path ? path->c_str() : nullptr)) {
        return helper_path(boost::system::in_place_value, std::move(*found));
    }
    return relay_error{relay_errc::environment,
                       "maka-eval-helper was not found: pass --helper PATH or set MAKA_EVAL_HELPER"};
}

boost::system::result<std::string, relay_error> helper_to_upload(const helper_source& options) {
    auto helper = locate_helper(options.on_host);
    if (!helper) {
        if (!options.in_environment.empty()) {
            return boost::system::result<std::string, relay_error>(boost::system::in_place_value, "");
        }
        return helper.error();
    }
    // The file itself, not a symlink to it: uploads (docker cp) copy a symlink as a symlink.
    std::error_code ec;
    auto real = std::filesystem::canonical(*helper, ec);
    return boost::system::result<std::string, relay_error>(boost::system::in_place_value,
                                                           ec ? *helper : real.string());
}

helper_hashing::helper_hashing(const std::string& path)
    : path_(path), fd_(posix::open_retry(path, O_RDONLY)), failed_(!fd_) {
    struct stat info {};
    if (fd_ && ::fstat(fd_.get(), &info) == 0) {
        info_ = info;
    }
}

bool helper_hashing::step() {
    // Chunks of 64 KiB: the binary is only held in memory when it must be uploaded.
    std::array<char, 65536> chunk{};
    if (failed_) {
        return false;
    }
    const ssize_t got = posix::read_retry(fd_.get(), chunk.data(), chunk.size());
    if (got <= 0) {
        failed_ = got < 0;
        return false;
    }
    sha_.update({chunk.data(), static_cast<std::size_t>(got)});
    size_ += static_cast<std::size_t>(got);
    return true;
}

boost::system::result<std::string, relay_error> helper_hashing::digest() const {
    if (failed_ || size_ == 0) {
        return relay_error{relay_errc::environment, "cannot read " + path_};
    }
    return boost::system::result<std::string, relay_error>(boost::system::in_place_value, sha_.hex());
}

boost::system::result<std::string, relay_error> helper_digest(const std::string& path) {
    helper_hashing hashing(path);
    while (hashing.step()) {
    }
    return hashing.digest();
}

std::string helper_name_of_digest(const std::string& digest) {
    return "helper-" + digest.substr(0, 16);
}

boost::system::result<std::string, relay_error> helper_content_name(const std::string& path) {
    auto digest = helper_digest(path);
    if (!digest) {
        return digest.error();
    }
    return helper_name_of_digest(*digest);
}

std::string digest_or_empty(const std::string& path) {
    // Remembered for this very file (device, inode, size, times), as the docker backend remembers it: a
    // signed local trial must not hash the megabyte each time.
    const install_record record;
    struct stat info {};
    const bool known_file = ::stat(path.c_str(), &info) == 0;
    if (known_file) {
        if (auto known = record.remembered_digest(info)) {
            return *known;
        }
    }
    auto digest = helper_digest(path);
    if (!digest) {
        return {};
    }
    if (known_file) {
        record.remember_digest(info, *digest);
    }
    return std::move(*digest);
}

} // namespace maka_eval::relay
