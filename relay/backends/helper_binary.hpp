// Which maka-eval-helper the relay uses, and the content-addressed name it has inside an environment.
//
// A helper found at its content-addressed path in a container is this very build, so it is uploaded once
// per container, never again: the docker backend keeps it at /.maka-eval/helper-<hash>, the bridge at
// /.maka-eval-helper-<hash> (a runner's upload cannot create a directory).
#pragma once

#include "contracts/digest.hpp"
#include "posix/io.hpp"
#include "relay/backends/backend_options.hpp"
#include "relay/trial/backend.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

// maka-eval-helper for this host: --helper, else beside this binary, else in the build tree, else on PATH.
[[nodiscard]] boost::system::result<std::string, relay_error> locate_helper(const std::string& configured);
// For the docker and bridge backends: the helper file to upload, resolved past symlinks; empty when
// --helper-in-container names one already there and none is found here.
[[nodiscard]] boost::system::result<std::string, relay_error> helper_to_upload(const helper_source& options);
// The helper's SHA-256 a chunk at a time, so that a coroutine can let other work run between chunks.
class helper_hashing {
  public:
    explicit helper_hashing(const std::string& path);
    // What the open file is (device, inode, size, times): the key under which its digest is remembered;
    // nullopt when it could not be opened.
    [[nodiscard]] const std::optional<struct stat>& file_info() const { return info_; }
    // Hashes the next chunk; false at the end of the file or on an error.
    bool step();
    // The lowercase hex digest once step() returned false; an error if the file could not be read or was
    // empty.
    [[nodiscard]] boost::system::result<std::string, relay_error> digest() const;

  private:
    std::string path_;
    posix::unique_fd fd_;
    contracts::sha256 sha_;
    std::optional<struct stat> info_;
    std::size_t size_ = 0;
    bool failed_ = false;
};
// The lowercase hex SHA-256 of the helper at `path`: what an installed copy must hash to.
[[nodiscard]] boost::system::result<std::string, relay_error> helper_digest(const std::string& path);
// The same, or empty when it cannot be read (for what a signed result records: a fact the relay lacks).
[[nodiscard]] std::string digest_or_empty(const std::string& path);
// "helper-<first 16 hex digits of its SHA-256>": its name inside a container (docker, bridge).
[[nodiscard]] boost::system::result<std::string, relay_error> helper_content_name(const std::string& path);
[[nodiscard]] std::string helper_name_of_digest(const std::string& digest);
// The directory inside a container that holds it, owned by root.
inline constexpr std::string_view helper_directory = ".maka-eval";

} // namespace maka_eval::relay
