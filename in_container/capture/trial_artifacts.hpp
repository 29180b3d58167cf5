// A trial's four artifacts in /logs/artifacts: the subject's stdout and stderr (captured_stream.hpp), its
// usage, and the receipt that vouches for them (contracts/receipt.hpp). Created before the subject starts
// (in the artifact store's staging directory when we are root: artifact_store.hpp), published after it is
// settled, the receipt last, so that whoever sees the receipt sees the files it describes.
#pragma once

#include "contracts/digest.hpp"
#include "contracts/secret_mask.hpp"
#include "contracts/session_messages.hpp"
#include "in_container/capture/artifact_store.hpp"
#include "in_container/capture/captured_stream.hpp"
#include "posix/io.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

class trial_artifacts {
  public:
    trial_artifacts() = default;
    trial_artifacts(const trial_artifacts&) = delete;
    trial_artifacts& operator=(const trial_artifacts&) = delete;
    ~trial_artifacts();

    // Opens the artifacts directory `dir` (readable by `group`) and creates the four files there, the
    // output files kept to `limit` bytes each. A failure names the file and the reason.
    boost::system::result<void, std::string> open(const std::string& dir, gid_t group, std::uint64_t limit);
    // Both output files are masked of these values from now on.
    void mask_with(const contracts::secret_masker& masker);
    // The usage file's one line.
    void write_usage(const contracts::subject_usage& usage);
    // After the subject is settled and its pipes handed off: the receipt written, everything published (the
    // receipt last), then every file, the receipt and the directory synced; a refused sync rewrites the
    // receipt to say so. `drained`: a drainer still appends to the output files. Returns the receipt's text
    // as finally written (empty when there was no artifacts directory).
    std::string publish(bool drained);

    captured_stream out;
    captured_stream err;

  private:
    std::string directory_;
    std::optional<artifact_store> store_;
    posix::unique_fd usage_fd_;
    posix::unique_fd receipt_fd_;
    contracts::sha256 usage_digest_;
    std::uint64_t usage_bytes_ = 0;
};

} // namespace maka_eval::in_container
