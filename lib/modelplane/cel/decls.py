"""The functions of the Kubernetes DRA device-selector CEL environment, with their overloads.

The table lists what ``k8s.io/dynamic-resource-allocation/cel`` v0.34 declares in the environment
the API server validates a new ResourceClaim with (``environment.NewExpressions``), one overload
a line, as cel-go prints it: function, ``G``lobal or ``M``ember, overload id, signature. The
parity test compares it with the real environment's declarations. Left out: the authorizer
library (its values need an ``authorizer`` variable this environment does not have) and the
legacy spellings of ``in`` and ``@not_strictly_false``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from modelplane.cel import types as t
from modelplane.cel.types import Type

TABLE: Final = """
!_ G logical_not (bool) -> bool
-_ G negate_double (double) -> double
-_ G negate_int64 (int) -> int
@in G in_list (<A>, list(<A>)) -> bool
@in G in_map (<A>, map(<A>, <B>)) -> bool
@not_strictly_false G not_strictly_false (bool) -> bool
_!=_ G not_equals (<A>, <A>) -> bool
_%_ G modulo_int64 (int, int) -> int
_%_ G modulo_uint64 (uint, uint) -> uint
_&&_ G logical_and (bool, bool) -> bool
_*_ G multiply_double (double, double) -> double
_*_ G multiply_int64 (int, int) -> int
_*_ G multiply_uint64 (uint, uint) -> uint
_+_ G add_bytes (bytes, bytes) -> bytes
_+_ G add_double (double, double) -> double
_+_ G add_duration_duration (google.protobuf.Duration, google.protobuf.Duration) -> google.protobuf.Duration
_+_ G add_duration_timestamp (google.protobuf.Duration, google.protobuf.Timestamp) -> google.protobuf.Timestamp
_+_ G add_timestamp_duration (google.protobuf.Timestamp, google.protobuf.Duration) -> google.protobuf.Timestamp
_+_ G add_int64 (int, int) -> int
_+_ G add_list (list(<A>), list(<A>)) -> list(<A>)
_+_ G add_string (string, string) -> string
_+_ G add_uint64 (uint, uint) -> uint
_-_ G subtract_double (double, double) -> double
_-_ G subtract_duration_duration (google.protobuf.Duration, google.protobuf.Duration) -> google.protobuf.Duration
_-_ G subtract_int64 (int, int) -> int
_-_ G subtract_timestamp_duration (google.protobuf.Timestamp, google.protobuf.Duration) -> google.protobuf.Timestamp
_-_ G subtract_timestamp_timestamp (google.protobuf.Timestamp, google.protobuf.Timestamp) -> google.protobuf.Duration
_-_ G subtract_uint64 (uint, uint) -> uint
_/_ G divide_double (double, double) -> double
_/_ G divide_int64 (int, int) -> int
_/_ G divide_uint64 (uint, uint) -> uint
_<=_ G less_equals_bool (bool, bool) -> bool
_<=_ G less_equals_int64 (int, int) -> bool
_<=_ G less_equals_int64_double (int, double) -> bool
_<=_ G less_equals_int64_uint64 (int, uint) -> bool
_<=_ G less_equals_uint64 (uint, uint) -> bool
_<=_ G less_equals_uint64_double (uint, double) -> bool
_<=_ G less_equals_uint64_int64 (uint, int) -> bool
_<=_ G less_equals_double (double, double) -> bool
_<=_ G less_equals_double_int64 (double, int) -> bool
_<=_ G less_equals_double_uint64 (double, uint) -> bool
_<=_ G less_equals_string (string, string) -> bool
_<=_ G less_equals_bytes (bytes, bytes) -> bool
_<=_ G less_equals_timestamp (google.protobuf.Timestamp, google.protobuf.Timestamp) -> bool
_<=_ G less_equals_duration (google.protobuf.Duration, google.protobuf.Duration) -> bool
_<_ G less_bool (bool, bool) -> bool
_<_ G less_int64 (int, int) -> bool
_<_ G less_int64_double (int, double) -> bool
_<_ G less_int64_uint64 (int, uint) -> bool
_<_ G less_uint64 (uint, uint) -> bool
_<_ G less_uint64_double (uint, double) -> bool
_<_ G less_uint64_int64 (uint, int) -> bool
_<_ G less_double (double, double) -> bool
_<_ G less_double_int64 (double, int) -> bool
_<_ G less_double_uint64 (double, uint) -> bool
_<_ G less_string (string, string) -> bool
_<_ G less_bytes (bytes, bytes) -> bool
_<_ G less_timestamp (google.protobuf.Timestamp, google.protobuf.Timestamp) -> bool
_<_ G less_duration (google.protobuf.Duration, google.protobuf.Duration) -> bool
_==_ G equals (<A>, <A>) -> bool
_>=_ G greater_equals_bool (bool, bool) -> bool
_>=_ G greater_equals_int64 (int, int) -> bool
_>=_ G greater_equals_int64_double (int, double) -> bool
_>=_ G greater_equals_int64_uint64 (int, uint) -> bool
_>=_ G greater_equals_uint64 (uint, uint) -> bool
_>=_ G greater_equals_uint64_double (uint, double) -> bool
_>=_ G greater_equals_uint64_int64 (uint, int) -> bool
_>=_ G greater_equals_double (double, double) -> bool
_>=_ G greater_equals_double_int64 (double, int) -> bool
_>=_ G greater_equals_double_uint64 (double, uint) -> bool
_>=_ G greater_equals_string (string, string) -> bool
_>=_ G greater_equals_bytes (bytes, bytes) -> bool
_>=_ G greater_equals_timestamp (google.protobuf.Timestamp, google.protobuf.Timestamp) -> bool
_>=_ G greater_equals_duration (google.protobuf.Duration, google.protobuf.Duration) -> bool
_>_ G greater_bool (bool, bool) -> bool
_>_ G greater_int64 (int, int) -> bool
_>_ G greater_int64_double (int, double) -> bool
_>_ G greater_int64_uint64 (int, uint) -> bool
_>_ G greater_uint64 (uint, uint) -> bool
_>_ G greater_uint64_double (uint, double) -> bool
_>_ G greater_uint64_int64 (uint, int) -> bool
_>_ G greater_double (double, double) -> bool
_>_ G greater_double_int64 (double, int) -> bool
_>_ G greater_double_uint64 (double, uint) -> bool
_>_ G greater_string (string, string) -> bool
_>_ G greater_bytes (bytes, bytes) -> bool
_>_ G greater_timestamp (google.protobuf.Timestamp, google.protobuf.Timestamp) -> bool
_>_ G greater_duration (google.protobuf.Duration, google.protobuf.Duration) -> bool
_?._ G select_optional_field (dyn, string) -> optional_type(<V>)
_?_:_ G conditional (bool, <A>, <A>) -> <A>
_[?_] G list_optindex_optional_int (list(<V>), int) -> optional_type(<V>)
_[?_] G optional_list_optindex_optional_int (optional_type(list(<V>)), int) -> optional_type(<V>)
_[?_] G map_optindex_optional_value (map(<K>, <V>), <K>) -> optional_type(<V>)
_[?_] G optional_map_optindex_optional_value (optional_type(map(<K>, <V>)), <K>) -> optional_type(<V>)
_[_] G index_list (list(<A>), int) -> <A>
_[_] G index_map (map(<A>, <B>), <A>) -> <B>
_[_] G optional_list_index_int (optional_type(list(<V>)), int) -> optional_type(<V>)
_[_] G optional_map_index_value (optional_type(map(<K>, <V>)), <K>) -> optional_type(<V>)
_||_ G logical_or (bool, bool) -> bool
add M quantity_add (kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity
add M quantity_add_int (kubernetes.Quantity, int) -> kubernetes.Quantity
asApproximateFloat M quantity_get_float (kubernetes.Quantity) -> double
asInteger M quantity_get_int (kubernetes.Quantity) -> int
bool G bool_to_bool (bool) -> bool
bool G string_to_bool (string) -> bool
bytes G bytes_to_bytes (bytes) -> bytes
bytes G string_to_bytes (string) -> bytes
cel.@mapInsert G @mapInsert_map_key_value (map(<K>, <V>), <K>, <V>) -> map(<K>, <V>)
cel.@mapInsert G @mapInsert_map_map (map(<K>, <V>), map(<K>, <V>)) -> map(<K>, <V>)
charAt M string_char_at_int (string, int) -> string
cidr G string_to_cidr (string) -> net.CIDR
compareTo M quantity_compare_to (kubernetes.Quantity, kubernetes.Quantity) -> int
compareTo M semver_compare_to (kubernetes.Semver, kubernetes.Semver) -> int
contains M contains_string (string, string) -> bool
containsCIDR M cidr_contains_cidr_string (net.CIDR, string) -> bool
containsCIDR M cidr_contains_cidr (net.CIDR, net.CIDR) -> bool
containsIP M cidr_contains_ip_string (net.CIDR, string) -> bool
containsIP M cidr_contains_ip_ip (net.CIDR, net.IP) -> bool
double G double_to_double (double) -> double
double G int64_to_double (int) -> double
double G string_to_double (string) -> double
double G uint64_to_double (uint) -> double
duration G duration_to_duration (google.protobuf.Duration) -> google.protobuf.Duration
duration G int64_to_duration (int) -> google.protobuf.Duration
duration G string_to_duration (string) -> google.protobuf.Duration
dyn G to_dyn (<A>) -> dyn
endsWith M ends_with_string (string, string) -> bool
family M ip_family (net.IP) -> int
find M string_find_string (string, string) -> string
findAll M string_find_all_string (string, string) -> list(string)
findAll M string_find_all_string_int (string, string, int) -> list(string)
first M list_first (list(<V>)) -> optional_type(<V>)
format M string_format (string, list(dyn)) -> string
format.byte G format.byte () -> kubernetes.NamedFormat
format.date G format.date () -> kubernetes.NamedFormat
format.datetime G format.datetime () -> kubernetes.NamedFormat
format.dns1035Label G format.dns1035Label () -> kubernetes.NamedFormat
format.dns1035LabelPrefix G format.dns1035LabelPrefix () -> kubernetes.NamedFormat
format.dns1123Label G format.dns1123Label () -> kubernetes.NamedFormat
format.dns1123LabelPrefix G format.dns1123LabelPrefix () -> kubernetes.NamedFormat
format.dns1123Subdomain G format.dns1123Subdomain () -> kubernetes.NamedFormat
format.dns1123SubdomainPrefix G format.dns1123SubdomainPrefix () -> kubernetes.NamedFormat
format.labelValue G format.labelValue () -> kubernetes.NamedFormat
format.named G format-named (string) -> optional_type(kubernetes.NamedFormat)
format.qualifiedName G format.qualifiedName () -> kubernetes.NamedFormat
format.uri G format.uri () -> kubernetes.NamedFormat
format.uuid G format.uuid () -> kubernetes.NamedFormat
getDate M timestamp_to_day_of_month_1_based (google.protobuf.Timestamp) -> int
getDate M timestamp_to_day_of_month_1_based_with_tz (google.protobuf.Timestamp, string) -> int
getDayOfMonth M timestamp_to_day_of_month (google.protobuf.Timestamp) -> int
getDayOfMonth M timestamp_to_day_of_month_with_tz (google.protobuf.Timestamp, string) -> int
getDayOfWeek M timestamp_to_day_of_week (google.protobuf.Timestamp) -> int
getDayOfWeek M timestamp_to_day_of_week_with_tz (google.protobuf.Timestamp, string) -> int
getDayOfYear M timestamp_to_day_of_year (google.protobuf.Timestamp) -> int
getDayOfYear M timestamp_to_day_of_year_with_tz (google.protobuf.Timestamp, string) -> int
getEscapedPath M url_get_escaped_path (kubernetes.URL) -> string
getFullYear M timestamp_to_year (google.protobuf.Timestamp) -> int
getFullYear M timestamp_to_year_with_tz (google.protobuf.Timestamp, string) -> int
getHost M url_get_host (kubernetes.URL) -> string
getHostname M url_get_hostname (kubernetes.URL) -> string
getHours M timestamp_to_hours (google.protobuf.Timestamp) -> int
getHours M timestamp_to_hours_with_tz (google.protobuf.Timestamp, string) -> int
getHours M duration_to_hours (google.protobuf.Duration) -> int
getMilliseconds M timestamp_to_milliseconds (google.protobuf.Timestamp) -> int
getMilliseconds M timestamp_to_milliseconds_with_tz (google.protobuf.Timestamp, string) -> int
getMilliseconds M duration_to_milliseconds (google.protobuf.Duration) -> int
getMinutes M timestamp_to_minutes (google.protobuf.Timestamp) -> int
getMinutes M timestamp_to_minutes_with_tz (google.protobuf.Timestamp, string) -> int
getMinutes M duration_to_minutes (google.protobuf.Duration) -> int
getMonth M timestamp_to_month (google.protobuf.Timestamp) -> int
getMonth M timestamp_to_month_with_tz (google.protobuf.Timestamp, string) -> int
getPort M url_get_port (kubernetes.URL) -> string
getQuery M url_get_query (kubernetes.URL) -> map(string, list(string))
getScheme M url_get_scheme (kubernetes.URL) -> string
getSeconds M timestamp_to_seconds (google.protobuf.Timestamp) -> int
getSeconds M timestamp_to_seconds_tz (google.protobuf.Timestamp, string) -> int
getSeconds M duration_to_seconds (google.protobuf.Duration) -> int
hasValue M optional_hasValue (optional_type(<V>)) -> bool
indexOf M list_a_index_of_int (list(<A>), <A>) -> int
indexOf M string_index_of_string (string, string) -> int
indexOf M string_index_of_string_int (string, string, int) -> int
int G int64_to_int64 (int) -> int
int G double_to_int64 (double) -> int
int G duration_to_int64 (google.protobuf.Duration) -> int
int G string_to_int64 (string) -> int
int G timestamp_to_int64 (google.protobuf.Timestamp) -> int
int G uint64_to_int64 (uint) -> int
ip G string_to_ip (string) -> net.IP
ip M cidr_ip (net.CIDR) -> net.IP
ip.isCanonical G ip_is_canonical (string) -> bool
isCIDR G is_cidr (string) -> bool
isGlobalUnicast M ip_is_global_unicast (net.IP) -> bool
isGreaterThan M quantity_is_greater_than (kubernetes.Quantity, kubernetes.Quantity) -> bool
isGreaterThan M semver_is_greater_than (kubernetes.Semver, kubernetes.Semver) -> bool
isIP G is_ip (string) -> bool
isInteger M quantity_is_integer (kubernetes.Quantity) -> bool
isLessThan M quantity_is_less_than (kubernetes.Quantity, kubernetes.Quantity) -> bool
isLessThan M semver_is_less_than (kubernetes.Semver, kubernetes.Semver) -> bool
isLinkLocalMulticast M ip_is_link_local_multicast (net.IP) -> bool
isLinkLocalUnicast M ip_is_link_local_unicast (net.IP) -> bool
isLoopback M ip_is_loopback (net.IP) -> bool
isQuantity G is_quantity_string (string) -> bool
isSemver G is_semver_string (string) -> bool
isSemver G is_semver_string_bool (string, bool) -> bool
isSorted M list_int_is_sorted_bool (list(int)) -> bool
isSorted M list_uint_is_sorted_bool (list(uint)) -> bool
isSorted M list_double_is_sorted_bool (list(double)) -> bool
isSorted M list_bool_is_sorted_bool (list(bool)) -> bool
isSorted M list_duration_is_sorted_bool (list(google.protobuf.Duration)) -> bool
isSorted M list_timestamp_is_sorted_bool (list(google.protobuf.Timestamp)) -> bool
isSorted M list_string_is_sorted_bool (list(string)) -> bool
isSorted M list_bytes_is_sorted_bool (list(bytes)) -> bool
isURL G is_url_string (string) -> bool
isUnspecified M ip_is_unspecified (net.IP) -> bool
join M list_join (list(string)) -> string
join M list_join_string (list(string), string) -> string
last M list_last (list(<V>)) -> optional_type(<V>)
lastIndexOf M list_a_last_index_of_int (list(<A>), <A>) -> int
lastIndexOf M string_last_index_of_string (string, string) -> int
lastIndexOf M string_last_index_of_string_int (string, string, int) -> int
lowerAscii M string_lower_ascii (string) -> string
major M semver_major (kubernetes.Semver) -> int
masked M cidr_masked (net.CIDR) -> net.CIDR
matches G matches (string, string) -> bool
matches M matches_string (string, string) -> bool
max M list_int_max_int (list(int)) -> int
max M list_uint_max_uint (list(uint)) -> uint
max M list_double_max_double (list(double)) -> double
max M list_bool_max_bool (list(bool)) -> bool
max M list_duration_max_duration (list(google.protobuf.Duration)) -> google.protobuf.Duration
max M list_timestamp_max_timestamp (list(google.protobuf.Timestamp)) -> google.protobuf.Timestamp
max M list_string_max_string (list(string)) -> string
max M list_bytes_max_bytes (list(bytes)) -> bytes
min M list_int_min_int (list(int)) -> int
min M list_uint_min_uint (list(uint)) -> uint
min M list_double_min_double (list(double)) -> double
min M list_bool_min_bool (list(bool)) -> bool
min M list_duration_min_duration (list(google.protobuf.Duration)) -> google.protobuf.Duration
min M list_timestamp_min_timestamp (list(google.protobuf.Timestamp)) -> google.protobuf.Timestamp
min M list_string_min_string (list(string)) -> string
min M list_bytes_min_bytes (list(bytes)) -> bytes
minor M semver_minor (kubernetes.Semver) -> int
optional.none G optional_none () -> optional_type(<V>)
optional.of G optional_of (<V>) -> optional_type(<V>)
optional.ofNonZeroValue G optional_ofNonZeroValue (<V>) -> optional_type(<V>)
optional.unwrap G optional_unwrap (list(optional_type(<V>))) -> list(<V>)
or M optional_or_optional (optional_type(<V>), optional_type(<V>)) -> optional_type(<V>)
orValue M optional_orValue_value (optional_type(<V>), <V>) -> <V>
patch M semver_patch (kubernetes.Semver) -> int
prefixLength M cidr_prefix_length (net.CIDR) -> int
quantity G string_to_quantity (string) -> kubernetes.Quantity
replace M string_replace_string_string (string, string, string) -> string
replace M string_replace_string_string_int (string, string, string, int) -> string
semver G string_to_semver (string) -> kubernetes.Semver
semver G string_bool_to_semver (string, bool) -> kubernetes.Semver
sets.contains G list_sets_contains_list (list(<T>), list(<T>)) -> bool
sets.equivalent G list_sets_equivalent_list (list(<T>), list(<T>)) -> bool
sets.intersects G list_sets_intersects_list (list(<T>), list(<T>)) -> bool
sign G quantity_sign (kubernetes.Quantity) -> int
size G size_bytes (bytes) -> int
size M bytes_size (bytes) -> int
size G size_list (list(<A>)) -> int
size M list_size (list(<A>)) -> int
size G size_map (map(<A>, <B>)) -> int
size M map_size (map(<A>, <B>)) -> int
size G size_string (string) -> int
size M string_size (string) -> int
split M string_split_string (string, string) -> list(string)
split M string_split_string_int (string, string, int) -> list(string)
startsWith M starts_with_string (string, string) -> bool
string G string_to_string (string) -> string
string G bool_to_string (bool) -> string
string G bytes_to_string (bytes) -> string
string G double_to_string (double) -> string
string G duration_to_string (google.protobuf.Duration) -> string
string G int64_to_string (int) -> string
string G timestamp_to_string (google.protobuf.Timestamp) -> string
string G uint64_to_string (uint) -> string
string G ip_to_string (net.IP) -> string
string G cidr_to_string (net.CIDR) -> string
strings.quote G strings_quote (string) -> string
sub M quantity_sub (kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity
sub M quantity_sub_int (kubernetes.Quantity, int) -> kubernetes.Quantity
substring M string_substring_int (string, int) -> string
substring M string_substring_int_int (string, int, int) -> string
sum M list_int_sum_int (list(int)) -> int
sum M list_uint_sum_uint (list(uint)) -> uint
sum M list_double_sum_double (list(double)) -> double
sum M list_duration_sum_duration (list(google.protobuf.Duration)) -> google.protobuf.Duration
timestamp G timestamp_to_timestamp (google.protobuf.Timestamp) -> google.protobuf.Timestamp
timestamp G int64_to_timestamp (int) -> google.protobuf.Timestamp
timestamp G string_to_timestamp (string) -> google.protobuf.Timestamp
trim M string_trim (string) -> string
type G type (<A>) -> type(<A>)
uint G uint64_to_uint64 (uint) -> uint
uint G double_to_uint64 (double) -> uint
uint G int64_to_uint64 (int) -> uint
uint G string_to_uint64 (string) -> uint
unwrapOpt M optional_unwrapOpt (list(optional_type(<V>))) -> list(<V>)
upperAscii M string_upper_ascii (string) -> string
url G string_to_url (string) -> kubernetes.URL
validate M format-validate (kubernetes.NamedFormat, string) -> optional_type(list(string))
value M optional_value (optional_type(<V>)) -> <V>
"""


@dataclass(frozen=True, slots=True)
class Overload:
    """One overload of a function: ``member`` overloads are called as ``target.function(args)``."""

    function: str
    id: str
    member: bool
    args: tuple[Type, ...]
    result: Type
    params: tuple[str, ...]


_NAMED: Final = {
    "bool": t.BOOL,
    "int": t.INT,
    "uint": t.UINT,
    "double": t.DOUBLE,
    "string": t.STRING,
    "bytes": t.BYTES,
    "dyn": t.DYN,
    "null_type": t.NULL,
    "type": t.TYPE,
    "google.protobuf.Timestamp": t.TIMESTAMP,
    "google.protobuf.Duration": t.DURATION,
    "kubernetes.Quantity": t.QUANTITY,
    "kubernetes.Semver": t.SEMVER,
    "kubernetes.URL": t.URL,
    "kubernetes.NamedFormat": t.NAMED_FORMAT,
    "net.IP": t.IP,
    "net.CIDR": t.CIDR,
}
_LINE: Final = re.compile(r"^(\S+) ([GM]) (\S+) \((.*)\) -> (.+)$")


def parse_type(text: str) -> Type:
    """Read a type as cel-go prints it: ``list(<A>)``, ``map(string, dyn)``, ``optional_type(<V>)``."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        return t.param(text[1:-1])
    if "(" not in text:
        return _NAMED[text]
    name, inner = text[: text.index("(")], text[text.index("(") + 1 : -1]
    args = [parse_type(a) for a in _split_args(inner)]
    match name:
        case "list":
            return t.list_of(args[0])
        case "map":
            return t.map_of(args[0], args[1])
        case "type":
            return t.type_of(args[0])
        case _:
            return Type("opaque", name, tuple(args))


def _split_args(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text.strip():
        parts.append(text[start:])
    return parts


def _params(types: tuple[Type, ...]) -> tuple[str, ...]:
    found: list[str] = []

    def walk(x: Type) -> None:
        if x.kind == "param" and x.name not in found:
            found.append(x.name)
        for p in x.params:
            walk(p)

    for x in types:
        walk(x)
    return tuple(found)


def _load() -> dict[str, tuple[Overload, ...]]:
    functions: dict[str, list[Overload]] = {}
    for line in TABLE.strip().splitlines():
        match = _LINE.match(line)
        if match is None:
            msg = f"bad declaration: {line}"
            raise ValueError(msg)
        name, kind, overload_id, args_text, result_text = match.groups()
        args = tuple(parse_type(a) for a in _split_args(args_text))
        result = parse_type(result_text)
        overload = Overload(name, overload_id, kind == "M", args, result, _params((*args, result)))
        functions.setdefault(name, []).append(overload)
    return {name: tuple(overloads) for name, overloads in functions.items()}


FUNCTIONS: Final = _load()
OVERLOADS: Final = {o.id: o for overloads in FUNCTIONS.values() for o in overloads}
