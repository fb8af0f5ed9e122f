"""Settings declared once: a dataclass field per command-line flag, and the parser, the Python checks and the command
line generated from the fields (CleanRL's ``@dataclass Args``, with argparse).

A command's settings are a dataclass whose flag fields are made by :func:`setting` (default, help, flag names, the
function that reads the value); fields that are not flags (values resolved or produced later) are made by
:func:`derived`. From the class:

- :func:`addSettingFlags` adds one argparse flag per flag field (a bool field is a switch, ``nargs="+"`` takes a list,
  which ``extend=True`` extends over repeated flags, the help shows the default unless it ends with its own ``[...]``);
- :func:`checkedSetting` reads a value given from Python with the same function as the flag, so that Python and the
  command line accept and refuse the same values, in argparse's words (a value that is not text must also be of the
  kind the flag reads: a string or path for a text flag, a number for a number's, a bool for a switch; a sequence or
  an array gives a flag of several values its items, a NumPy number is written as the number it is
  (:func:`valueText`), and a NumPy bool or a 0-d array is taken as the Python value it holds, a torch tensor as the
  NumPy array of its values, one of a single value as that value (:func:`plainValue`));
- :func:`checkedSettings` checks every flag field of an instance that way (a config built in Python is refused
  where the command line would refuse it);
- :func:`settingsFromNamespace` makes an instance from the parsed command line;
- :func:`settingArguments` writes the command-line words that give an instance (settings at their default left
  out), for a subprocess or to show;
- :func:`keywordArguments` writes a Python API call's keywords as a command's words, through the command's parser
  (for the commands whose settings are not a dataclass: srl_models.prepare, the sweep pipeline, gather_results).

Invariant: a flag's name, default, parser and help exist only in its field.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from srl_toolbox.cli import UsageError, nonEmptyText

# The parser of a field without its own, by the field's type as written (postponed annotations).
FIELD_TYPES = {"int": int, "float": float, "str": nonEmptyText, "str | None": nonEmptyText, "int | None": int,
               "float | None": float}


def setting(default: Any, doc: str, *, flags: Sequence[str] = (), parse: Any = None, nargs: int | str | None = None,
            metavar: Any = None, choices: Sequence[str] | None = None, required: bool = False,
            hidden: bool = False, extend: bool = False) -> Any:
    """
    Declare a flag: the field's default is the flag's.

    :param default: the default value (a bool field is a switch, off by default)
    :param doc: the help text (``--help`` adds the default); placeholders such as ``{algos}`` are filled by
        :func:`addSettingFlags`'s ``substitutions``
    :param flags: the flag names, long one last (default: ``--`` and the field name with ``-`` for ``_``)
    :param parse: the function that reads the value from the command line (default: the field's type)
    :param nargs: argparse's nargs (``"+"``: a list)
    :param metavar: argparse's metavar
    :param choices: the only values accepted (argparse's choices)
    :param required: the command line must give it (its default, None, stands for "not given" in Python)
    :param hidden: left out of ``--help`` (set by other commands, not by people)
    :param extend: with ``nargs="+"``, a repeated flag adds to the list (else the last one gives it)
    :return: the dataclass field
    """
    return dataclasses.field(default=default, metadata={"kind": "flag", "doc": doc, "flags": tuple(flags),
                                                        "parse": parse, "nargs": nargs, "metavar": metavar,
                                                        "choices": choices, "required": required,
                                                        "hidden": hidden, "extend": extend})


def derived(doc: str, default: Any = None, factory: Any = None) -> Any:
    """
    Declare a field that is no flag: resolved by validation, or set as the command goes.

    :param doc: what it holds
    :param default: its value until set
    :param factory: a function making the default (for mappings)
    :return: the dataclass field
    """
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={"kind": "derived", "doc": doc})
    return dataclasses.field(default=default, metadata={"kind": "derived", "doc": doc})


def settingFields(cls: type) -> dict[str, dataclasses.Field]:
    """:return: the flag fields of a settings dataclass, by name, in declaration order"""
    return {field.name: field for field in dataclasses.fields(cls) if field.metadata.get("kind") == "flag"}


def flagNames(field: dataclasses.Field) -> tuple[str, ...]:
    """:return: a flag field's option strings, long one last"""
    return field.metadata["flags"] or (f"--{field.name.replace('_', '-')}",)


def _parser(field: dataclasses.Field) -> Any:
    """:return: the function that reads the field's value from its text"""
    return field.metadata["parse"] or FIELD_TYPES.get(field.type, str)


def addSettingFlags(parser: argparse.ArgumentParser, cls: type, substitutions: Mapping[str, str] | None = None
                    ) -> argparse.ArgumentParser:
    """
    :param parser: the command's parser
    :param cls: a settings dataclass
    :param substitutions: placeholder -> text, replaced in the help texts (installed algorithms, envs, ...)
    :return: the parser, with one flag per flag field of ``cls``
    """
    for field in settingFields(cls).values():
        meta = field.metadata
        doc = meta["doc"]
        for placeholder, text in (substitutions or {}).items():
            doc = doc.replace(placeholder, text)
        options: dict[str, Any] = {"dest": field.name}
        # no default to show for a switch, an unset value or an empty list; a help ending in [...] says its own
        if meta["hidden"]:
            options["help"] = argparse.SUPPRESS
        elif field.default is None or field.default is False or field.default == () or doc.endswith("]"):
            options["help"] = doc
        else:
            options["help"] = f"{doc} [{field.default}]"
        if field.default is False:
            options["action"] = "store_true"
        elif meta["nargs"] == "+":
            options.update(nargs="+", default=list(field.default), **({"action": "extend"} if meta["extend"] else {}))
            if meta["parse"] is not None:
                options["type"] = meta["parse"]
        else:
            options.update(default=field.default, type=_parser(field))
            if meta["nargs"] is not None:
                options["nargs"] = meta["nargs"]
        if meta["metavar"] is not None:
            options["metavar"] = meta["metavar"]
        if meta["choices"] is not None:
            options["choices"] = meta["choices"]
        if meta["required"]:
            options["required"] = True
        parser.add_argument(*flagNames(field), **options)
    return parser


def _numpyArray(value: Any) -> Any:
    """:return: an array of another library (torch's tensor: anything else with ``tolist`` and a ``dtype``, found by
        duck typing so that this module does not import torch) as the NumPy array of its values, of the NumPy dtype
        of the same name where there is one (a float32 learning rate keeps its short text: ``0.0003``); one of a
        single value as a 0-d array, so that it is read as its number; anything else (NumPy's own) as given"""
    if isinstance(value, (np.ndarray, np.generic)) or not (hasattr(value, "tolist") and hasattr(value, "dtype")):
        return value
    try:
        dtype = np.dtype(str(value.dtype).rpartition(".")[2])
    except TypeError:  # (a dtype NumPy lacks, torch's bfloat16: its values as Python's)
        dtype = None
    array = np.asarray(value.tolist(), dtype=dtype)
    return array.reshape(()) if array.size == 1 else array


def plainValue(value: Any) -> Any:
    """:return: a value given from Python as the one value it holds, where NumPy or torch wraps it: a 0-d array
        (``np.array(2)``) as its item (``np.int64(2)``, a NumPy number that :func:`valueText` writes as the number it
        is), a NumPy bool (``np.bool_(True)``) as Python's, a torch tensor as the NumPy array of its values
        (:func:`_numpyArray`: one of a single value, ``torch.tensor(3e-4)`` or ``torch.tensor([3e-4])``, as its
        number); anything else as given (arrays of several values are read item by item: :func:`valueItems`)"""
    value = _numpyArray(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    return bool(value) if isinstance(value, np.bool_) else value


def valueText(value: Any) -> str:
    """:return: a value as the command line writes it: every digit of a float kept (NumPy's ``np.float64(0.5)`` as the
        float it is), an integer of another type (``np.int64(3)``) as the int it equals, a path as its text, anything
        else as its ``str`` (NumPy's ``np.float32(0.001)``: ``0.001``); a NumPy bool or 0-d array as the value it
        holds (:func:`plainValue`)"""
    value = plainValue(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def valueItems(value: Any) -> list[Any] | None:
    """:return: the items of a value given from Python for several values (a flag's ``nargs``): of a sequence (a list,
        a tuple) or an array (NumPy's, torch's), as a list, each item as :func:`plainValue` reads it; None for one value
        (text, a number, a mapping, a 0-d array, a tensor of one value...)"""
    value = _numpyArray(value)
    if isinstance(value, (str, bytes)) or not (isinstance(value, Sequence) or hasattr(value, "__array__")):
        return None
    try:
        return [plainValue(item) for item in value]
    except TypeError:  # (a 0-d array)
        return None


def _parsedItem(field: dataclasses.Field, value: Any) -> Any:
    """:return: one value read by the field's parser from its text, as the command line reads it
    :raises ValueError: a value the flag refuses, or one given from Python of another kind than the flag's (text
        goes as the command line's; 5 for a path, a list for one value)"""
    parse, text, name = _parser(field), valueText(value), "/".join(flagNames(field))
    try:
        parsed = parse(text)
    except argparse.ArgumentTypeError as error:
        raise ValueError(f"argument {name}: {error}") from None
    except (TypeError, ValueError):
        raise ValueError(f"argument {name}: invalid {getattr(parse, '__name__', 'value')} value: {text!r}") from None
    refusal = kindRefusal(name, field.name, value, parsed)
    if refusal is not None:
        raise ValueError(refusal)
    return parsed


def kindRefusal(flag: str, keyword: str, value: Any, parsed: Any) -> str | None:
    """
    :param flag: the flag's name (``--log-dir``)
    :param keyword: its name from Python (``log_dir``)
    :param value: the value given from Python
    :param parsed: what the flag's parser read from its text
    :return: why a value of another kind than the flag reads is refused (one line, argparse's form: ``argument
        --log-dir: log_dir 5 (int) must be a string or a path``), None for text (read as the command line reads
        it) or a value of the flag's kind
    """
    kind = _kindOf(parsed)
    if kind is None or isinstance(value, (str, os.PathLike)) or _isKind(value, parsed):
        return None
    return f"argument {flag}: {keyword} {value!r} ({type(value).__name__}) must be {kind}"


def _kindOf(parsed: Any) -> str | None:
    """:return: in words, the kind of Python value a flag that reads ``parsed`` takes besides its text (None: any
    value whose text it reads)"""
    if isinstance(parsed, bool):
        return "True or False"
    if isinstance(parsed, numbers.Integral):
        return "an integer"
    if isinstance(parsed, numbers.Real):
        return "a number"
    if isinstance(parsed, str):
        return "a string or a path"
    return None


def _isKind(value: Any, parsed: Any) -> bool:
    """:return: whether ``value`` (not text) is of the kind of ``parsed`` (:func:`_kindOf`): a bool for a bool, any
    number for a number (an integer flag's parser refuses 2.5 and reads 1e3, from Python as from its text)"""
    if isinstance(parsed, bool) or isinstance(value, bool):
        return isinstance(parsed, bool) and isinstance(value, bool)
    return isinstance(parsed, numbers.Real) and isinstance(value, numbers.Real)


def checkedSetting(cls: type, name: str, value: Any) -> Any:
    """
    :param cls: a settings dataclass
    :param name: one of its flag fields
    :param value: its value given from Python (None for the default; NumPy's wrapped values as :func:`plainValue`
        reads them: ``np.bool_(True)`` for a switch, ``np.array(2)`` for a number)
    :return: the value as the flag's parser reads it
    :raises ValueError: a value the flag refuses, in argparse's words
    """
    value = plainValue(value)
    field = settingFields(cls)[name]
    flag = "/".join(flagNames(field))
    if value is None:
        if field.metadata["required"]:
            raise ValueError(f"the following arguments are required: {flag}")
        return field.default
    if field.default is False:
        if not isinstance(value, bool):
            raise ValueError(f"argument {flag}: a switch takes True or False, not {value!r}")
        return value
    if field.metadata["nargs"] == "+":
        items = valueItems(value)
        return tuple(valueText(item) for item in ([value] if items is None else items))
    if field.metadata["nargs"] is not None:
        items = valueItems(value) or [value]
        if len(items) != field.metadata["nargs"]:
            raise ValueError(f"argument {flag}: expected {field.metadata['nargs']} arguments")
        return tuple(_parsedItem(field, item) for item in items)
    parsed = _parsedItem(field, value)
    choices = field.metadata["choices"]
    if choices is not None and parsed not in choices:
        raise ValueError(f"argument {flag}: invalid choice: {parsed!r} (choose from {', '.join(map(repr, choices))})")
    return parsed


def checkedSettings(settings: Any) -> Any:
    """
    :param settings: an instance of a settings dataclass, built in Python or parsed
    :return: a new instance whose flag fields are read by their flags' parsers (:func:`checkedSetting`)
    :raises UsageError: the first value the command line would refuse, in argparse's words (one line)
    """
    try:
        return dataclasses.replace(settings, **{name: checkedSetting(type(settings), name, getattr(settings, name))
                                                for name in settingFields(type(settings))})
    except ValueError as error:
        raise UsageError(str(error)) from None


def settingsFromNamespace(cls: type, args: argparse.Namespace) -> Any:
    """
    :param cls: a settings dataclass
    :param args: the command line parsed by a parser that :func:`addSettingFlags` made from ``cls``
    :return: the instance holding its flags (lists as tuples)
    """
    values = {name: getattr(args, name) for name in settingFields(cls)}
    return cls(**{name: tuple(value) if isinstance(value, list) else value for name, value in values.items()})


def flagWords(flag: str, value: Any) -> list[str]:
    """:return: a flag and its value as command-line words (a switch alone, a list as several words)"""
    if value is True:
        return [flag]
    items = valueItems(value)
    if items is not None:
        return [flag, *map(valueText, items)]
    return [flag, valueText(value)]


def settingArguments(settings: Any) -> list[str]:
    """
    :param settings: an instance of a settings dataclass
    :return: the command-line words that give it: each flag whose value is not its default (hidden flags left out)
    """
    words: list[str] = []
    for name, field in settingFields(type(settings)).items():
        value = getattr(settings, name)
        if field.metadata["hidden"] or value == field.default or value is None or value is False:
            continue
        words += flagWords(flagNames(field)[-1], value)
    return words


def keywordArguments(parser: argparse.ArgumentParser, keywords: Mapping[str, Any], command: str, *,
                     api_named: Mapping[str, str] | None = None, passed_on: bool = False) -> list[str]:
    """
    A Python API call's keywords as a command's words: each keyword is a flag of the command's parser by its
    ``dest`` (its long name with ``_`` for ``-``); a switch takes True or False (a store-false switch writes its flag
    for False), any other flag a value (:func:`plainValue`; a list, a tuple or an array for several values, a
    repeatable flag repeated for each item), or None or False, which leave it out. A value of another kind than the flag
    reads is refused as :func:`kindRefusal` says (``log_dir=5``); the values themselves are left to the parser.

    :param parser: the command's parser
    :param keywords: keyword -> value, in the order of the words
    :param command: the command's module (``srl_models.prepare``), named when a keyword is none of its flags
    :param api_named: the flags the API gives under another name (``{"no_progress": "progress"}``): refused as
        keywords, naming the API's
    :param passed_on: a keyword that is none of the parser's flags is written as ``--its-name`` too (True alone,
        False or None left out), for the command to pass on or refuse (the sweep pipeline passes such flags to
        train); else it is refused
    :return: the words
    :raises UsageError: a keyword that is no flag (with the closest one), a switch not given True or False, several
        values for a flag of one, a value of another kind than its flag reads (one line each)
    """
    api_named = api_named or {}
    options: dict[str, argparse.Action] = {}
    for action in parser._actions:  # noqa: SLF001 (argparse has no public list)
        if action.option_strings and action.dest not in ("help", "version", *api_named):
            options.setdefault(action.dest, action)  # (of two flags of one dest, --vis and --no-vis: the first)
    words: list[str] = []
    for name, value in keywords.items():
        value = plainValue(value)
        action = options.get(name)
        if action is None and (name in api_named or not passed_on):
            raise unknownKeyword(name, value, options, command, api_named)
        if action is None:  # passed on: True a switch, False or None left out, anything else a value
            if value is not None and value is not False:
                words += flagWords(f"--{name.replace('_', '-')}", value)
            continue
        if action.nargs == 0:  # a switch: its flag for the value it stores
            switchKeyword(name, value)
            if value is not None and value == action.const:
                words.append(action.option_strings[-1])
            continue
        if value is None or value is False:
            continue
        flag = action.option_strings[-1]
        items = valueItems(value)
        repeated = isinstance(action, argparse._AppendAction)  # noqa: SLF001 (a repeatable flag: once per item)
        if items is not None and action.nargs is None and not repeated:
            raise UsageError(f"argument {flag}: {name} {value!r} ({type(value).__name__}) must be one value")
        for item in [value] if items is None else items:
            refusal = _actionKindRefusal(action, flag, name, item)
            if refusal is not None:
                raise UsageError(refusal)
        if repeated:
            words += [word for item in ([value] if items is None else items) for word in (flag, valueText(item))]
        else:
            words += flagWords(flag, value)
    return words


def _actionKindRefusal(action: argparse.Action, flag: str, name: str, value: Any) -> str | None:
    """:return: :func:`kindRefusal` of a value given from Python for a flag of a parser (None when the flag refuses
        its text: the parser says why)"""
    if isinstance(value, (str, os.PathLike)):
        return None
    try:
        parsed = (action.type or str)(valueText(value))
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        return None
    return kindRefusal(flag, name, value, parsed)


def unknownKeyword(name: str, value: Any, known: Iterable[str], command: str,
                   api_named: Mapping[str, str] | None = None) -> UsageError:
    """
    :param name: a keyword that is no flag of the command
    :param value: its value
    :param known: the keywords the command takes
    :param command: the command's module
    :param api_named: the flags the API gives under another name (``{"no_progress": "progress"}``)
    :return: its refusal, naming the API's keyword for a flag of ``api_named``, else the closest keyword
    """
    if api_named and name in api_named:
        return UsageError(f"unrecognized keyword {name}={value!r}: the API's keyword is {api_named[name]}=True or "
                          "False")
    close = difflib.get_close_matches(name, list(known), n=1)
    return UsageError(f"unrecognized keyword {name}={value!r}: the keywords are the long flags of python -m "
                      f"{command} --help with _ for -" + (f" (did you mean {close[0]}?)" if close else ""))


def switchKeyword(name: str, value: Any) -> bool | None:
    """
    :param name: a Python API's keyword for a switch
    :param value: its value (NumPy's bool too: :func:`plainValue`)
    :return: the value as Python's True, False or None
    :raises UsageError: anything else (one line)
    """
    value = plainValue(value)
    if value is not None and not isinstance(value, bool):
        raise UsageError(f"{name} {value!r} must be True or False")
    return value


def integerKeyword(name: str, value: Any, minimum: int = 1, words: str = "a positive integer") -> int:
    """
    :param name: a Python API's keyword for a count
    :param value: its value (Python's or NumPy's integers; a bool is not one)
    :param minimum: the smallest value taken
    :param words: what it must be, in the refusal
    :return: the value as an int
    :raises UsageError: another kind of value, or one below ``minimum`` (one line)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise UsageError(f"{name} {value!r} must be {words}")
    return int(value)
