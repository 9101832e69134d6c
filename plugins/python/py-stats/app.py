"""`py-stats`: descriptive statistics and correlation of lists of numbers.

A small tool plugin written in Python, built with componentize-py against the
`tool-plugin` world of wit/plugin.wit (see ../README.md). It needs no grants.
"""

import json
import math
import statistics

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

# Longest list accepted: the work is O(n log n), the input JSON is capped by the host.
MAX_ITEMS = 1_000_000


def schema(properties, required):
    return json.dumps(
        {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
    )


def numbers(description, min_items):
    return {
        "type": "array",
        "items": {"type": "number"},
        "minItems": min_items,
        "maxItems": MAX_ITEMS,
        "description": description,
    }


TOOLS = [
    types.ToolSpec(
        name="describe",
        description=(
            "Describes a list of numbers: count, sum, mean, median, sample standard "
            "deviation and variance, population standard deviation, min, max and "
            "quantile cut points (quartiles by default)."
        ),
        input_schema=schema(
            {
                "data": numbers("The numbers (at least one).", 1),
                "quantiles": {
                    "type": "integer",
                    "minimum": 2,
                    "maximum": 100,
                    "description": "Number of equal groups to cut the data into: "
                    "4 for quartiles (the default), 10 for deciles, 100 for percentiles.",
                },
            },
            ["data"],
        ),
        action="compute:stats:describe",
        destructive=False,
        idempotent=True,
    ),
    types.ToolSpec(
        name="correlate",
        description=(
            "Correlates two equally long lists of numbers: Pearson's and Spearman's "
            "correlation coefficients and the least-squares line y = slope * x + intercept."
        ),
        input_schema=schema(
            {
                "x": numbers("The first variable (at least two numbers).", 2),
                "y": numbers("The second variable, as long as `x`.", 2),
            },
            ["x", "y"],
        ),
        action="compute:stats:correlate",
        destructive=False,
        idempotent=True,
    ),
]


def invalid(message):
    return Err(types.ToolError_InvalidInput(message))


def parse_object(text, allowed):
    try:
        data = json.loads(text)
    except ValueError as e:
        raise invalid(f"input is not JSON: {e}")
    if not isinstance(data, dict):
        raise invalid("input must be a JSON object")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise invalid(
            f"unknown field `{unknown[0]}`: the input has "
            + ", ".join(f"`{name}`" for name in allowed)
        )
    return data


def number_list(data, field, min_items):
    values = data.get(field)
    if values is None:
        raise invalid(f"`{field}` is required: a list of numbers")
    if not isinstance(values, list):
        raise invalid(f"`{field}` must be a list of numbers, not {json_type(values)}")
    if len(values) < min_items:
        raise invalid(f"`{field}` needs at least {min_items} number(s), got {len(values)}")
    if len(values) > MAX_ITEMS:
        raise invalid(f"`{field}` has {len(values)} items; at most {MAX_ITEMS} are accepted")
    for i, v in enumerate(values):
        # bool is an int in Python, but `true` is not a number in JSON.
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise invalid(f"`{field}[{i}]` must be a number, not {json_type(v)}")
        if isinstance(v, float) and not math.isfinite(v):
            raise invalid(f"`{field}[{i}]` must be a finite number, not {v}")
    return values


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def describe(text):
    data = parse_object(text, ["data", "quantiles"])
    values = number_list(data, "data", 1)
    n = data.get("quantiles", 4)
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 100:
        raise invalid("`quantiles` must be an integer from 2 to 100")
    count = len(values)
    result = {
        "count": count,
        "sum": math.fsum(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "pstdev": statistics.pstdev(values),
        # Sample statistics and cut points need two values.
        "stdev": None,
        "variance": None,
        "quantiles": None,
    }
    if count >= 2:
        result["stdev"] = statistics.stdev(values)
        result["variance"] = statistics.variance(values)
        result["quantiles"] = statistics.quantiles(values, n=n, method="inclusive")
    return result


def correlate(text):
    data = parse_object(text, ["x", "y"])
    x = number_list(data, "x", 2)
    y = number_list(data, "y", 2)
    if len(x) != len(y):
        raise invalid(f"`x` and `y` must be equally long: `x` has {len(x)}, `y` has {len(y)}")
    for field, values in (("x", x), ("y", y)):
        if min(values) == max(values):
            raise invalid(f"`{field}` is constant: correlation needs values that vary")
    slope, intercept = statistics.linear_regression(x, y)
    return {
        "count": len(x),
        "pearson": statistics.correlation(x, y),
        "spearman": statistics.correlation(x, y, method="ranked"),
        "slope": slope,
        "intercept": intercept,
    }


HANDLERS = {"describe": describe, "correlate": correlate}


class Tool(exports.Tool):
    def list_tools(self):
        return TOOLS

    def call(self, ctx, tool, input):
        handler = HANDLERS.get(tool)
        if handler is None:
            raise invalid(f"unknown tool `{tool}`: this plugin has `describe` and `correlate`")
        try:
            result = handler(input)
        except (statistics.StatisticsError, ArithmeticError, ValueError) as e:
            raise Err(types.ToolError_Failed(f"{tool}: {e}"))
        try:
            return json.dumps(result, allow_nan=False)
        except ValueError:
            raise Err(types.ToolError_Failed(f"{tool}: the result is not a finite number"))
