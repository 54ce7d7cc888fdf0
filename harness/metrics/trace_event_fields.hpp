#pragma once
// One event's fields as the trace reader meets them: views into the bytes in hand, numbers kept
// as their text until an event is kept. Everything here runs for every key of every event, so it
// is inline, in the reader's translation unit.
#include "metrics/json_scan.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace harness::metrics::trace_fields {

/// A string field of the event being parsed: a view into the buffer, or into `decoded` when the
/// JSON text has escapes.
struct Field {
    std::string_view text;
    bool present = false;
    std::string decoded;
};

/// A numeric field, kept as its token and converted only for the events that are kept (most
/// are not); `bad_at` marks a value of the wrong type, or, once converted, out of range.
struct Number {
    std::string_view token;
    bool present = false;
    bool converted = false;
    double value = 0;
    const char* bad_at = nullptr;

    /// Whether the value is a finite number, converting only when the text does not already
    /// say so: digits with a sign and a point, short enough to be far from overflow and
    /// underflow (most ts and dur of events the metrics do not keep).
    bool finite() {
        if (bad_at != nullptr || converted) {
            return bad_at == nullptr;
        }
        constexpr std::size_t k_surely_finite = 300;
        bool plain = token.size() <= k_surely_finite;
        for (std::size_t k = 0; plain && k < token.size(); ++k) {
            const char ch = token[k];
            plain = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
        }
        return plain || convert();
    }

    /// The value, converted on first use; only for numbers found finite().
    double get() {
        convert();
        return value;
    }

    /// Converts the token; false (and bad_at set) when it is not a finite number.
    bool convert() {
        if (!converted && bad_at == nullptr) {
            converted = true;
            if (!json_scan::to_double(token, value)) {
                bad_at = token.data();
            }
        }
        return bad_at == nullptr;
    }
};

enum class EventKey : std::uint8_t { ph, cat, name, ts, dur, pid, tid, args, other };

/// The event's keys by length first: this runs for every key of millions of events.
inline EventKey event_key(std::string_view key) {
    switch (key.size()) {
    case 2: return key == "ph" ? EventKey::ph : key == "ts" ? EventKey::ts : EventKey::other;
    case 3:
        return key == "cat"   ? EventKey::cat
               : key == "dur" ? EventKey::dur
               : key == "pid" ? EventKey::pid
               : key == "tid" ? EventKey::tid
                              : EventKey::other;
    case 4: return key == "name" ? EventKey::name : key == "args" ? EventKey::args : EventKey::other;
    default: return EventKey::other;
    }
}

struct RawEvent {
    const char* start = nullptr;
    Field ph, cat, name, pid, tid;
    Number ts, dur;
    Field collective, dtype, arg_name;
    Number nelems;

    void reset(const char* at) {
        start = at;
        for (Field* f : {&ph, &cat, &name, &pid, &tid, &collective, &dtype, &arg_name}) {
            f->present = false;
            f->text = {};
        }
        for (Number* n : {&ts, &dur, &nelems}) {
            *n = Number{};
        }
    }
};

} // namespace harness::metrics::trace_fields
