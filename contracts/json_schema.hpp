// The part of JSON Schema (2020-12) our schemas use, checked against a value: type, const, enum,
// properties, required, additionalProperties (false), items, pattern, minimum, maximum.
//
// For what a reader of ours must refuse by shape (a signed result's statement, checked by `verify` against
// contracts/schema/attestation-statement.schema.json), and for the tests that hold the golden lines to their
// schemas. Not a general validator: a keyword it does not know is ignored, as the specification says.
#pragma once

#include <string>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::contracts {

// Empty when `value` conforms; otherwise where and why it does not ("predicate.subject.uid: not an
// integer").
[[nodiscard]] std::string schema_violation(const boost::json::object& schema,
                                           const boost::json::value& value);

} // namespace maka_eval::contracts
