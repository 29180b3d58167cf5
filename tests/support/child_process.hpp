// Test support: a child process driven line by line over its stdin/stdout, with deadlines on every read and
// its resource usage (peak RSS) collected at exit.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace maka_eval::test {

class child_process {
  public:
    // `env` replaces the environment when given.
    explicit child_process(const std::vector<std::string>& argv,
                           const std::optional<std::vector<std::string>>& env = std::nullopt);
    ~child_process();
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    bool send(const std::string& text);
    void close_stdin();
    // The next stdout line (without "\n"), or nullopt at EOF or after `timeout_ms`.
    std::optional<std::string> read_line(int timeout_ms = 10000);
    // The next `size` bytes of stdout, whatever they are; nullopt when it ends first or time runs out.
    std::optional<std::string> read_bytes(std::size_t size, int timeout_ms = 10000);
    // Exit code (128 + n for signal n), or -1 after `timeout_ms` (the child is then killed).
    int wait(int timeout_ms = 20000);
    [[nodiscard]] pid_t pid() const { return pid_; }
    [[nodiscard]] long peak_rss_kib() const { return peak_rss_kib_; }
    [[nodiscard]] const std::string& stderr_text() const { return err_; }
    // Whether `needle` appears in what the child wrote to stderr within `timeout_ms` (the event a test waits
    // for: a log line).
    bool stderr_shows(const std::string& needle, int timeout_ms = 30000);

  private:
    void pump(int timeout_ms);
    // Pumps stdout until `enough` says so; false when it ends or time runs out first.
    bool pump_until(const std::function<bool()>& enough, int timeout_ms);
    pid_t pid_ = -1;
    int in_ = -1;
    int out_ = -1;
    int errfd_ = -1;
    std::string buffer_;
    std::string err_;
    long peak_rss_kib_ = 0;
    int status_ = -1;
};

} // namespace maka_eval::test
