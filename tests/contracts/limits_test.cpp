// The wire constants are the original relay's: a change here changes what the
// orchestrator or a subject sees.
#include "contracts/limits.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

TEST_CASE("limits, prefixes, exit codes and paths match the original") {
    CHECK(payload_limit_bytes == 2048);
    CHECK(carrier_limit_bytes == 65536);
    CHECK(control_line_limit_bytes >= 65536); // at least the original's; see the comment on why it is larger
    CHECK(result_frame_prefix == "MAKA-EVAL-RESULT-V1");
    CHECK(scope_error_prefix == "MAKA-EVAL-SCOPE-ERROR-V1");
    CHECK(result_token_variable == "MAKA_EVAL_RESULT_TOKEN");
    CHECK(scope_unavailable_exit_code == 111);
    CHECK(framework_timeout_exit_code == 124);
    CHECK(artifacts_directory == "/logs/artifacts");
    CHECK(stdout_artifact_name == "maka-subject.stdout.txt");
    CHECK(stderr_artifact_name == "maka-subject.stderr.txt");
    CHECK(scope_directory == "/logs/agent");
}

} // namespace
