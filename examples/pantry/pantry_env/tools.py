"""ConvertUnits: a stateless tool of this package, declared with toolgym's @tool."""

from __future__ import annotations

from typing import Annotated

from toolgym import Param, ToolError, tool

FACTORS = {("g", "kg"): 0.001, ("kg", "g"): 1000.0}


@tool(
    name="ConvertUnits", category="logic", description="Converts a mass between grams (g) and kilograms (kg)."
)
def convert_units(
    value: Annotated[float, Param("the amount")],
    source: Annotated[str, Param("its unit", enum=["g", "kg"])],
    target: Annotated[str, Param("the unit wanted", enum=["g", "kg"])],
) -> dict[str, float | str]:
    factor = 1.0 if source == target else FACTORS.get((source, target))
    if factor is None:
        raise ToolError(f"cannot convert {source} to {target}")
    return {"value": round(value * factor, 6), "unit": target}
