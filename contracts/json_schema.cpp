// A JSON Schema subset (see json_schema.hpp).
#include "contracts/json_schema.hpp"

#include <regex>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

namespace maka_eval::contracts {
namespace json = boost::json;

namespace {

bool is_type(std::string_view type, const json::value& value) {
    return (type == "string" && value.is_string()) ||
           (type == "integer" && (value.is_int64() || value.is_uint64())) ||
           (type == "number" && value.is_number()) || (type == "boolean" && value.is_bool()) ||
           (type == "array" && value.is_array()) || (type == "object" && value.is_object()) ||
           (type == "null" && value.is_null());
}

double number_of(const json::value& value) {
    return value.is_int64()    ? static_cast<double>(value.get_int64())
           : value.is_uint64() ? static_cast<double>(value.get_uint64())
                               : value.get_double();
}

std::string at(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// NOLINTNEXTLINE(misc-no-recursion): schemas nest as deep as the messages they describe
std::string check(const json::object& schema, const json::value& value, const std::string& path) {
    const std::string where = path.empty() ? "the document" : path;
    if (const auto* constant = schema.if_contains("const"); constant != nullptr && *constant != value) {
        return where + ": is not " + json::serialize(*constant);
    }
    if (const auto* choices = schema.if_contains("enum"); choices != nullptr && choices->is_array()) {
        bool found = false;
        for (const auto& choice : choices->get_array()) {
            found = found || choice == value;
        }
        if (!found) {
            return where + ": " + json::serialize(value) + " is not one of " + json::serialize(*choices);
        }
    }
    if (const auto* type = schema.if_contains("type")) {
        bool ok = false;
        std::string named;
        if (type->is_string()) {
            ok = is_type(type->get_string(), value);
            named = type->get_string();
        } else if (type->is_array()) {
            for (const auto& one : type->get_array()) {
                ok = ok || (one.is_string() && is_type(one.get_string(), value));
            }
            named = json::serialize(*type);
        }
        if (!ok) {
            return where + ": not " + named;
        }
    }
    if (value.is_string()) {
        if (const auto* pattern = schema.if_contains("pattern"); pattern != nullptr && pattern->is_string()) {
            const std::regex rule(pattern->get_string().c_str(), std::regex::ECMAScript);
            if (!std::regex_search(value.get_string().c_str(), rule)) {
                return where + ": does not match " + std::string(pattern->get_string());
            }
        }
    }
    if (value.is_number()) {
        if (const auto* low = schema.if_contains("minimum");
            low != nullptr && number_of(value) < number_of(*low)) {
            return where + ": below " + json::serialize(*low);
        }
        if (const auto* high = schema.if_contains("maximum");
            high != nullptr && number_of(value) > number_of(*high)) {
            return where + ": above " + json::serialize(*high);
        }
    }
    if (value.is_array()) {
        if (const auto* items = schema.if_contains("items"); items != nullptr && items->is_object()) {
            std::size_t index = 0;
            for (const auto& item : value.get_array()) {
                auto found = check(items->get_object(), item, path + "[" + std::to_string(index++) + "]");
                if (!found.empty()) {
                    return found;
                }
            }
        }
    }
    if (value.is_object()) {
        const auto& object = value.get_object();
        const auto* properties = schema.if_contains("properties");
        const bool closed =
            schema.contains("additionalProperties") && schema.at("additionalProperties") == false;
        for (const auto& member : object) {
            const auto* property = properties != nullptr && properties->is_object()
                                       ? properties->get_object().if_contains(member.key())
                                       : nullptr;
            if (property == nullptr) {
                if (closed) {
                    return at(path, member.key()) + ": not a property this schema knows";
                }
                continue;
            }
            if (property->is_object()) {
                auto found = check(property->get_object(), member.value(), at(path, member.key()));
                if (!found.empty()) {
                    return found;
                }
            }
        }
        if (const auto* required = schema.if_contains("required");
            required != nullptr && required->is_array()) {
            for (const auto& name : required->get_array()) {
                if (name.is_string() && !object.contains(name.get_string())) {
                    return at(path, name.get_string()) + ": missing";
                }
            }
        }
    }
    return {};
}

} // namespace

std::string schema_violation(const json::object& schema, const json::value& value) {
    return check(schema, value, "");
}

} // namespace maka_eval::contracts
