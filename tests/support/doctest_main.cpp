// The one doctest main every test executable links.
//
// ctest runs each test case on its own (`--test-case=<name>`, from doctest_discover_tests). A filter that
// matches nothing — a name CMake split at a ';', a renamed case — runs zero cases, which doctest counts as
// success: a test that cannot fail. Here a run that was filtered but executed no test case fails instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <string_view>

#include <doctest/doctest.h>

namespace {

unsigned g_cases_run = 0;
bool g_run_ended = false;

// Counts the cases that passed the filters; reports nothing itself.
struct run_counter : doctest::IReporter {
    explicit run_counter(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats& stats) override {
        g_cases_run = stats.numTestCasesPassingFilters;
        g_run_ended = true;
    }
    void test_case_start(const doctest::TestCaseData&) override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("maka-eval-run-counter", 1, run_counter);

} // namespace

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    const int result = context.run();
    if (context.shouldExit()) {
        return result; // --help, --list-test-cases …
    }
    bool filtered = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg(argv[i]);
        filtered = filtered || arg.starts_with("--test-case=") || arg.starts_with("-tc=");
    }
    if (result == 0 && filtered && g_run_ended && g_cases_run == 0) {
        std::fputs("doctest: the --test-case filter matched no test case (a name with ';' split by CMake?)\n",
                   stderr);
        return 1;
    }
    return result;
}
