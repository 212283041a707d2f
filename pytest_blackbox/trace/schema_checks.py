"""The trace v2 schema's checks, generated from the schema by ``pytest_blackbox.trace.schema``.

Do not edit; regenerate it with ``python -m pytest_blackbox.trace.schema > pytest_blackbox/trace/schema_checks.py``.
It is used only while ``SCHEMA_SHA256`` is the schema file's (else the schema is compiled).
"""

# fmt: off
# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

import re as _re
from typing import Any

from pytest_blackbox.trace.schema import _is_integer, _is_number

SCHEMA_SHA256 = '3f8a0ee9b6ba278a145720f51f2a3e5119cd7852943190d200078676520c2782'

_c0 = _re.compile('^[0-9a-f]{64}$').search
_c1 = (list, bool, type(None), int, float, dict, str,)
_c2 = frozenset(('hash', 'id', 'index', 'payload', 'prevHash', 'timestamp', 'type', ))
_c3 = frozenset(('metadata', 'model_input', 'model_output', 'tool_call', 'tool_result', ))
_c4 = (int, float,)
_c5 = (type(None), str,)
_c6 = _re.compile('^[0-9a-f]{64}$').search
_c7_branches: dict[str, Any] = {}
_c8 = frozenset(('messages', 'model', 'params', 'systemPrompt', 'tools', ))
_c9 = frozenset(('content', 'role', ))
_c10 = frozenset(('assistant', 'user', ))
_c11 = (list, str,)
_c12 = frozenset(('builtin', 'description', 'inputSchema', 'name', 'settings', ))
_c13 = frozenset(('result', 'toolCallId', 'toolInput', 'toolName', 'type', ))
_c14 = frozenset(('compaction', 'media', 'server_tool_result', 'server_tool_use', 'text', 'tool_result', 'tool_use', ))
_c15 = frozenset(('citations', 'text', 'type', ))
_c16 = frozenset(('content', 'type', ))
_c17 = frozenset(('caller', 'toolCallId', 'toolInput', 'toolName', 'type', ))
_c18 = frozenset(('error', 'result', 'toolCallId', 'toolName', 'type', ))
_c19 = frozenset(('byteLength', 'citations', 'content', 'context', 'data', 'detail', 'fileId', 'kind', 'mediaType', 'name', 'sha256', 'text', 'title', 'type', 'url', ))
_c20 = frozenset(('audio', 'document', 'file', 'image', ))
_c21 = _re.compile('^[0-9a-f]{64}$').search
_c22 = (bool,)
_c23_branches: dict[str, Any] = {}
_c24 = frozenset(('final_answer', 'tool_call', 'tool_calls', ))
_c25 = frozenset(('toolCallId', 'toolInput', 'toolName', 'type', ))
_c26 = frozenset(('calls', 'choices', 'container', 'content', 'conversation', 'logprobs', 'moderation', 'omitted', 'reasoning', 'stop', 'text', 'type', ))
_c27 = frozenset(('choices', 'container', 'content', 'conversation', 'logprobs', 'moderation', 'omitted', 'reasoning', 'stop', 'stopSequence', 'text', 'type', ))
_c28 = frozenset(('blocklist', 'contentFilter', 'contextWindow', 'language', 'length', 'malformedCall', 'other', 'pause', 'personalData', 'prohibitedContent', 'recitation', 'refusal', 'stopSequence', 'tooManyCalls', 'unexpectedCall', ))
_c29_branches: dict[str, Any] = {}
_c30 = frozenset(('reasoning', 'reasoningContent', ))
_c31 = frozenset(('callArguments', 'candidateIndex', 'codeExecutionId', 'finishReason', 'textLogprobs', 'textMessage', 'textPieces', ))
_c32 = frozenset(('compaction', 'server_tool_result', 'server_tool_use', 'text', 'tool_use', ))
_c33 = frozenset(('toolCallId', 'toolInput', 'toolName', ))
_c34 = frozenset(('error', 'result', 'toolCallId', 'toolName', ))
_c35 = frozenset(('event', 'result', 'status', ))
_c36_branches: dict[str, Any] = {}
_c37 = frozenset(('agent_error', 'calls_in_flight', 'max_steps_exceeded', 'process_exit', 'unknown_tool', ))
_c38 = frozenset(('event', 'message', 'reason', 'status', ))
_c39 = frozenset(('event', 'exitCode', 'reason', 'status', ))
_c40 = frozenset(('event', 'exitCode', 'inFlight', 'reason', 'status', ))
_c41 = frozenset(('event', 'maxSteps', 'reason', 'status', ))
_c42 = frozenset(('event', 'reason', 'status', 'toolCallId', 'toolName', ))
_c43_branches: dict[str, Any] = {}
_c44 = frozenset(('createdAt', 'forkedFromStepId', 'id', 'parentId', 'steps', 'version', ))
_c45 = (int, float,)

def _def_0(v):
    return (isinstance(v, str) and _c0(v) is not None and len(v) <= 64)

def _def_1(v):
    return (isinstance(v, _c1))

def _f2(v):
    return ((not isinstance(v, dict) or (('payload' not in v or (_def_3(v['payload']))))))

def _f3(v):
    return ((not isinstance(v, dict) or (('payload' not in v or (_def_9(v['payload']))))))

def _f4(v):
    return ((not isinstance(v, dict) or (('payload' not in v or (_def_17(v['payload']))))))

def _f5(v):
    return ((not isinstance(v, dict) or (('payload' not in v or (_def_18(v['payload']))))))

def _f6(v):
    return ((not isinstance(v, dict) or (('payload' not in v or (_def_19(v['payload']))))))

def _f7(v):
    if not isinstance(v, dict):  # an 'if' made of required/properties holds vacuously
        return all(branch(v) for branch in _c7_every)
    found = v.get('type')
    branch = _c7_branches.get(found) if isinstance(found, str) else None
    return branch is None or branch(v)

def _def_2(v):
    return ((isinstance(v, dict) and 'id' in v and 'index' in v and 'type' in v and 'timestamp' in v and 'payload' in v and 'prevHash' in v and 'hash' in v and _c2.issuperset(v) and (isinstance(v['id'], str)) and (_is_integer(v['index']) and v['index'] >= 0) and ((isinstance(v['type'], str) and v['type'] in _c3)) and ((isinstance(v['timestamp'], _c4) and not isinstance(v['timestamp'], bool))) and (isinstance(v['prevHash'], _c5) and (not isinstance(v['prevHash'], str) or (_c6(v['prevHash']) is not None and len(v['prevHash']) <= 64))) and (_def_0(v['hash']))) and _f7(v))

def _def_3(v):
    return ((isinstance(v, dict) and 'messages' in v and 'tools' in v and _c8.issuperset(v) and (isinstance(v['messages'], list) and all(map(_def_4, v['messages']))) and (isinstance(v['tools'], list) and all(map(_def_5, v['tools']))) and ('systemPrompt' not in v or (isinstance(v['systemPrompt'], str))) and ('model' not in v or (isinstance(v['model'], str))) and ('params' not in v or ((isinstance(v['params'], dict) and True)))))

def _def_4(v):
    return ((isinstance(v, dict) and 'role' in v and 'content' in v and _c9.issuperset(v) and ((isinstance(v['role'], str) and v['role'] in _c10)) and (isinstance(v['content'], _c11) and (not isinstance(v['content'], list) or (all(map(_def_8, v['content'])))))))

def _def_5(v):
    return ((isinstance(v, dict) and 'name' in v and 'description' in v and _c12.issuperset(v) and (isinstance(v['name'], str)) and (isinstance(v['description'], str)) and ('inputSchema' not in v or (_def_1(v['inputSchema']))) and ('builtin' not in v or (isinstance(v['builtin'], str))) and ('settings' not in v or ((isinstance(v['settings'], dict) and True)))))

def _def_6(v):
    return ((isinstance(v, dict) and 'type' in v and (isinstance(v['type'], str))))

def _def_7(v):
    return ((isinstance(v, dict) and 'type' in v and 'toolCallId' in v and 'toolName' in v and _c13.issuperset(v) and (isinstance(v['toolCallId'], str)) and (isinstance(v['toolName'], str)) and ('toolInput' not in v or (_def_1(v['toolInput']))) and ('result' not in v or (_def_1(v['result'])))))

def _f14(v):
    return ((not isinstance(v, dict) or ('type' in v and 'text' in v and _c15.issuperset(v) and (isinstance(v['text'], str)) and ('citations' not in v or (isinstance(v['citations'], list) and all(map(_def_6, v['citations'])))))))

def _f15(v):
    return ((not isinstance(v, dict) or ('type' in v and 'content' in v and _c16.issuperset(v) and ((isinstance(v['content'], dict) and True)))))

def _f16(v):
    return (_def_7(v) and (not isinstance(v, dict) or ('toolInput' in v)))

def _f17(v):
    return (_def_7(v) and (not isinstance(v, dict) or ('result' in v)))

def _f18(v):
    return ((not isinstance(v, dict) or ('type' in v and 'toolCallId' in v and 'toolName' in v and 'toolInput' in v and _c17.issuperset(v) and (isinstance(v['toolCallId'], str)) and (isinstance(v['toolName'], str)) and (_def_1(v['toolInput'])) and ('caller' not in v or ((isinstance(v['caller'], dict) and True))))))

def _f19(v):
    return ((not isinstance(v, dict) or ('type' in v and 'toolCallId' in v and 'toolName' in v and _c18.issuperset(v) and (isinstance(v['toolCallId'], str)) and (isinstance(v['toolName'], str)) and ('result' not in v or (_def_1(v['result']))) and ('error' not in v or (isinstance(v['error'], str))))) and ((((not isinstance(v, dict) or ('result' in v)))) + (((not isinstance(v, dict) or ('error' in v)))) == 1))

def _f20(v):
    return ((not isinstance(v, dict) or ('type' in v and 'kind' in v and _c19.issuperset(v) and ((isinstance(v['kind'], str) and v['kind'] in _c20)) and ('mediaType' not in v or (isinstance(v['mediaType'], str))) and ('sha256' not in v or (isinstance(v['sha256'], str) and _c21(v['sha256']) is not None)) and ('byteLength' not in v or (_is_integer(v['byteLength']) and v['byteLength'] >= 0)) and ('data' not in v or (isinstance(v['data'], str))) and ('url' not in v or (isinstance(v['url'], str))) and ('fileId' not in v or (isinstance(v['fileId'], str))) and ('text' not in v or (isinstance(v['text'], str))) and ('content' not in v or (isinstance(v['content'], list) and all(map(_def_8, v['content'])))) and ('title' not in v or (isinstance(v['title'], str))) and ('context' not in v or (isinstance(v['context'], str))) and ('citations' not in v or (isinstance(v['citations'], _c22))) and ('detail' not in v or (isinstance(v['detail'], str))) and ('name' not in v or (isinstance(v['name'], str))))) and ((((not isinstance(v, dict) or ('sha256' in v and 'byteLength' in v)))) + (((not isinstance(v, dict) or ('url' in v)))) + (((not isinstance(v, dict) or ('fileId' in v)))) + (((not isinstance(v, dict) or ('text' in v)))) + (((not isinstance(v, dict) or ('content' in v)))) == 1))

def _f21(v):
    if not isinstance(v, dict):  # an 'if' made of required/properties holds vacuously
        return all(branch(v) for branch in _c23_every)
    found = v.get('type')
    branch = _c23_branches.get(found) if isinstance(found, str) else None
    return branch is None or branch(v)

def _def_8(v):
    return ((isinstance(v, dict) and 'type' in v and ((isinstance(v['type'], str) and v['type'] in _c14))) and _f21(v))

def _f23(v):
    return ((not isinstance(v, dict) or ('type' in v and 'toolCallId' in v and 'toolName' in v and 'toolInput' in v and _c25.issuperset(v) and (isinstance(v['toolCallId'], str)) and (isinstance(v['toolName'], str)) and (_def_1(v['toolInput'])))))

def _f24(v):
    return ((not isinstance(v, dict) or ('type' in v and 'calls' in v and _c26.issuperset(v) and (isinstance(v['calls'], list) and len(v['calls']) >= 1 and all(map(_def_17, v['calls']))) and ('text' not in v or (isinstance(v['text'], str))) and ('stop' not in v or ((isinstance(v['stop'], str) and v['stop'] == 'length'))) and ('content' not in v or (_def_16(v['content']))) and ('moderation' not in v or (_def_10(v['moderation']))) and ('reasoning' not in v or (_def_12(v['reasoning']))) and ('logprobs' not in v or (_def_13(v['logprobs']))) and ('omitted' not in v or (_def_14(v['omitted']))) and ('conversation' not in v or (isinstance(v['conversation'], str))) and ('container' not in v or (_def_15(v['container']))) and ('choices' not in v or (_def_11(v['choices']))))))

def _f25(v):
    return ((not isinstance(v, dict) or ('type' in v and 'text' in v and _c27.issuperset(v) and (isinstance(v['text'], str)) and ('stop' not in v or ((isinstance(v['stop'], str) and v['stop'] in _c28))) and ('stopSequence' not in v or (isinstance(v['stopSequence'], str))) and ('moderation' not in v or (_def_10(v['moderation']))) and ('reasoning' not in v or (_def_12(v['reasoning']))) and ('logprobs' not in v or (_def_13(v['logprobs']))) and ('omitted' not in v or (_def_14(v['omitted']))) and ('conversation' not in v or (isinstance(v['conversation'], str))) and ('container' not in v or (_def_15(v['container']))) and ('content' not in v or (_def_16(v['content']))) and ('choices' not in v or (_def_11(v['choices']))))))

def _f26(v):
    if not isinstance(v, dict):  # an 'if' made of required/properties holds vacuously
        return all(branch(v) for branch in _c29_every)
    found = v.get('type')
    branch = _c29_branches.get(found) if isinstance(found, str) else None
    return branch is None or branch(v)

def _def_9(v):
    return ((isinstance(v, dict) and 'type' in v and ((isinstance(v['type'], str) and v['type'] in _c24))) and _f26(v))

def _def_10(v):
    return ((isinstance(v, dict) and True))

def _def_11(v):
    return (isinstance(v, list) and len(v) >= 1 and all(map(_def_9, v)))

def _def_12(v):
    return ((isinstance(v, dict) and _c30.issuperset(v) and ('reasoningContent' not in v or (isinstance(v['reasoningContent'], str))) and ('reasoning' not in v or (isinstance(v['reasoning'], str)))))

def _f31(v):
    return ((isinstance(v, dict) and True))

def _def_13(v):
    return (isinstance(v, list) and all(map(_f31, v)))

def _f33(v):
    return ((isinstance(v, str) and v in _c31))

def _def_14(v):
    return (isinstance(v, list) and len(v) >= 1 and all(map(_f33, v)))

def _def_15(v):
    return ((isinstance(v, dict) and 'id' in v and (isinstance(v['id'], str))))

def _f36(v):
    return (((_def_8(v)) and ((not isinstance(v, dict) or (('type' not in v or ((isinstance(v['type'], str) and v['type'] in _c32))))))))

def _def_16(v):
    return (isinstance(v, list) and all(map(_f36, v)))

def _def_17(v):
    return ((isinstance(v, dict) and 'toolCallId' in v and 'toolName' in v and 'toolInput' in v and _c33.issuperset(v) and (isinstance(v['toolCallId'], str)) and (isinstance(v['toolName'], str)) and (_def_1(v['toolInput']))))

def _def_18(v):
    return ((isinstance(v, dict) and 'toolCallId' in v and 'toolName' in v and _c34.issuperset(v) and (isinstance(v['toolCallId'], str)) and (isinstance(v['toolName'], str)) and ('result' not in v or (_def_1(v['result']))) and ('error' not in v or (isinstance(v['error'], str)))) and ((((not isinstance(v, dict) or ('result' in v)))) + (((not isinstance(v, dict) or ('error' in v)))) == 1))

def _f40(v):
    return ((not isinstance(v, dict) or ('event' in v and 'status' in v and 'result' in v and _c35.issuperset(v) and ((isinstance(v['status'], str) and v['status'] == 'success')) and (isinstance(v['result'], str)))))

def _f41(v):
    if not isinstance(v, dict):  # an 'if' made of required/properties holds vacuously
        return all(branch(v) for branch in _c36_every)
    found = v.get('event')
    branch = _c36_branches.get(found) if isinstance(found, str) else None
    return branch is None or branch(v)

def _def_19(v):
    return ((isinstance(v, dict) and 'event' in v and (isinstance(v['event'], str))) and _f41(v))

def _f43(v):
    return ((not isinstance(v, dict) or ('message' in v and _c38.issuperset(v) and (isinstance(v['message'], str)))))

def _f44(v):
    return ((not isinstance(v, dict) or ('exitCode' in v and _c39.issuperset(v) and (_is_integer(v['exitCode'])))))

def _f45(v):
    return ((not isinstance(v, dict) or ('exitCode' in v and 'inFlight' in v and _c40.issuperset(v) and (_is_integer(v['exitCode'])) and (_is_integer(v['inFlight']) and v['inFlight'] >= 1))))

def _f46(v):
    return ((not isinstance(v, dict) or ('maxSteps' in v and _c41.issuperset(v) and (_is_integer(v['maxSteps']) and v['maxSteps'] >= 0))))

def _f47(v):
    return ((not isinstance(v, dict) or ('toolName' in v and _c42.issuperset(v) and (isinstance(v['toolName'], str)) and ('toolCallId' not in v or (isinstance(v['toolCallId'], str))))))

def _f48(v):
    if not isinstance(v, dict):  # an 'if' made of required/properties holds vacuously
        return all(branch(v) for branch in _c43_every)
    found = v.get('reason')
    branch = _c43_branches.get(found) if isinstance(found, str) else None
    return branch is None or branch(v)

def _def_20(v):
    return ((not isinstance(v, dict) or ('event' in v and 'status' in v and 'reason' in v and ((isinstance(v['status'], str) and v['status'] == 'error')) and ((isinstance(v['reason'], str) and v['reason'] in _c37)))) and _f48(v))

def _f50(v):
    return ((isinstance(v, dict) and 'version' in v and 'id' in v and 'createdAt' in v and 'steps' in v and _c44.issuperset(v) and ((_is_number(v['version']) and v['version'] == 2)) and (isinstance(v['id'], str)) and ((isinstance(v['createdAt'], _c45) and not isinstance(v['createdAt'], bool))) and (isinstance(v['steps'], list) and all(map(_def_2, v['steps']))) and ('parentId' not in v or (isinstance(v['parentId'], str))) and ('forkedFromStepId' not in v or (isinstance(v['forkedFromStepId'], str)))))

_c7_branches.update({'model_input': _f2, 'model_output': _f3, 'tool_call': _f4, 'tool_result': _f5, 'metadata': _f6})
_c7_every = (_f2, _f3, _f4, _f5, _f6, )
_c23_branches.update({'text': _f14, 'compaction': _f15, 'server_tool_use': _f16, 'server_tool_result': _f17, 'tool_use': _f18, 'tool_result': _f19, 'media': _f20})
_c23_every = (_f14, _f15, _f16, _f17, _f18, _f19, _f20, )
_c29_branches.update({'tool_call': _f23, 'tool_calls': _f24, 'final_answer': _f25})
_c29_every = (_f23, _f24, _f25, )
_c36_branches.update({'run_completed': _f40, 'run_failed': _def_20})
_c36_every = (_f40, _def_20, )
_c43_branches.update({'agent_error': _f43, 'process_exit': _f44, 'calls_in_flight': _f45, 'max_steps_exceeded': _f46, 'unknown_tool': _f47})
_c43_every = (_f43, _f44, _f45, _f46, _f47, )
DEFINITIONS = {'hash': _def_0, 'jsonValue': _def_1, 'step': _def_2, 'modelInput': _def_3, 'message': _def_4, 'toolDefinition': _def_5, 'citation': _def_6, 'serverPart': _def_7, 'messagePart': _def_8, 'modelOutput': _def_9, 'moderation': _def_10, 'choices': _def_11, 'reasoning': _def_12, 'logprobs': _def_13, 'omitted': _def_14, 'container': _def_15, 'outputContent': _def_16, 'toolCall': _def_17, 'toolResult': _def_18, 'metadata': _def_19, 'runFailed': _def_20}
ROOT = _f50
