import json
from datetime import datetime

import pytest
import tokenizers
from tokenizers import models

from mlcx.errors import MessagesError
from mlcx.runtime.text.chat_template import FALLBACK_TEMPLATE, ChatTemplate

BOS, EOS = "<s>", "</s>"

CHATML_WITH_SYSTEM = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Llama-2 style: block tags on their own lines (trim_blocks / lstrip_blocks matter), bos/eos.
LLAMA2 = """{{ bos_token }}
{% for message in messages %}
    {% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{ raise_exception('Conversation roles must alternate user/assistant/user/assistant') }}
    {% endif %}
    {% if message['role'] == 'user' %}
        {{ '[INST] ' + message['content'].strip() + ' [/INST]' }}
    {% else %}
        {{ ' ' + message['content'].strip() + ' ' + eos_token }}
    {% endif %}
{% endfor %}
"""

TOOLS_AND_LOOPS = (
    "{% for message in messages %}{% if message['role'] == 'tool' %}{% break %}{% endif %}"
    "{{ message | tojson }}|{{ message | tojson(indent=2, sort_keys=True) }}\n"
    "{% endfor %}{{ 'Today: ' + strftime_now('%Y-%m-%d') }}"
)

CONVERSATIONS = [
    [{"role": "user", "content": "Hi!"}],
    [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": 'caf\u00e9 \u4e2d\u6587 \U0001f600 <tag> & "quotes"'},
    ],
    [{"role": "user", "content": "  padded  "}, {"role": "assistant", "content": "ok\n"}],
]


@pytest.fixture(scope="module")
def reference():
    from transformers import PreTrainedTokenizerFast

    backend = tokenizers.Tokenizer(models.BPE({"<s>": 0, "</s>": 1, "a": 2}, []))
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS)


def expected(reference, template, messages, add_generation_prompt=True) -> str:
    return reference.apply_chat_template(
        messages,
        chat_template=template,
        tokenize=False,
        add_generation_prompt=add_generation_prompt,
    )


@pytest.mark.parametrize("template", [CHATML_WITH_SYSTEM, TOOLS_AND_LOOPS])
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_renders_like_transformers(reference, template, add_generation_prompt):
    ours = ChatTemplate(template, BOS, EOS)
    for messages in CONVERSATIONS + [CONVERSATIONS[1] + [{"role": "tool", "content": "x"}]]:
        want = expected(reference, template, messages, add_generation_prompt)
        assert ours.render(messages, add_generation_prompt) == want


def test_llama2_whitespace_control_and_special_tokens(reference):
    ours = ChatTemplate(LLAMA2, BOS, EOS)
    messages = CONVERSATIONS[2] + [{"role": "user", "content": "again"}]
    rendered = ours.render(messages)
    assert rendered == expected(reference, LLAMA2, messages)
    # Block-tag lines vanish; expression lines keep their indentation and newline.
    indent = " " * 8
    assert rendered == (
        f"<s>\n{indent}[INST] padded [/INST]\n{indent} ok </s>\n{indent}[INST] again [/INST]\n"
    )


def test_raise_exception_becomes_value_error_with_template_message():
    ours = ChatTemplate(LLAMA2, BOS, EOS)
    with pytest.raises(MessagesError, match="roles must alternate"):
        ours.render([{"role": "assistant", "content": "first"}])


def test_strftime_now_is_today():
    rendered = ChatTemplate("{{ strftime_now('%Y-%m-%d') }}").render(
        [{"role": "user", "content": ""}]
    )
    assert rendered == datetime.now().strftime("%Y-%m-%d")


def test_tojson_does_not_escape_html_or_unicode():
    ours = ChatTemplate("{{ messages[0]['content'] | tojson }}")
    assert ours.render([{"role": "user", "content": "<\u00e9>&'"}]) == '"<\u00e9>&\'"'


def test_fallback_without_template_is_role_lines():
    ours = ChatTemplate(None)
    assert ours.is_fallback and ours.source == FALLBACK_TEMPLATE
    messages = [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hi"}]
    assert ours.render(messages) == "system: Be nice.\nuser: Hi\nassistant:"
    assert ours.render(messages, add_generation_prompt=False) == "system: Be nice.\nuser: Hi\n"


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ("hello", "list of dicts"),
        ([], "empty"),
        ([{"role": "user", "content": "a"}, "b"], r"messages\[1\] must be a dict"),
        ([{"role": "robot", "content": "a"}], r"messages\[0\]\.role"),
        ([{"role": "user"}], r"messages\[0\]\.content must be a string"),
        ([{"role": "user", "content": ["a"]}], r"messages\[0\]\.content"),
    ],
)
def test_invalid_messages_are_rejected_with_index_and_field(messages, match):
    with pytest.raises(MessagesError, match=match) as caught:
        ChatTemplate(CHATML_WITH_SYSTEM).render(messages)
    assert caught.value.param == "messages"


def test_invalid_template_is_value_error():
    with pytest.raises(ValueError, match="not valid Jinja"):
        ChatTemplate("{% for %}")


def test_sandbox_blocks_unsafe_access():
    ours = ChatTemplate("{{ messages.__class__.__mro__ }}")
    with pytest.raises(ValueError, match="chat template failed"):
        ours.render([{"role": "user", "content": "a"}])


def test_messages_cannot_be_mutated_by_template():
    ours = ChatTemplate("{{ messages.append(1) }}")
    with pytest.raises(ValueError, match="chat template failed"):
        ours.render([{"role": "user", "content": "a"}])


# Hugging Face's tools convention: the `tools` variable, tool_calls with dict arguments,
# tool messages with tool_call_id.
TOOLS_TEMPLATE = (
    "{% if tools %}<tools>{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools>\n"
    "{% endif %}{% for message in messages %}{{ message['role'] }}: "
    "{% if message.tool_calls %}{% for call in message.tool_calls %}"
    "<call>{{ call.function.name }} {{ call.function.arguments | tojson }}</call>"
    "{% endfor %}{% else %}{{ message['content'] }}{% endif %}"
    "{% if message.tool_call_id %} ({{ message.tool_call_id }}){% endif %}\n{% endfor %}"
)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def tool_turns(arguments) -> list[dict]:
    function = {"name": "get_weather", "arguments": arguments}
    call = {"id": "c1", "type": "function", "function": function}
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
    ]


def test_tools_and_tool_messages_reach_the_template_like_transformers(reference):
    ours = ChatTemplate(TOOLS_TEMPLATE, BOS, EOS)
    assert ours.knows_tools
    messages = tool_turns({"city": "Paris"})
    want = reference.apply_chat_template(
        messages, chat_template=TOOLS_TEMPLATE, tools=[WEATHER], tokenize=False
    )
    assert ours.render(messages, tools=[WEATHER]) == want
    assert '<call>get_weather {"city": "Paris"}</call>' in want and "(c1)" in want
    # OpenAI sends arguments as JSON text: the template still gets a dict
    assert ours.render(tool_turns('{"city": "Paris"}'), tools=[WEATHER]) == want


def test_a_template_without_tools_gets_the_generic_format():
    ours = ChatTemplate(CHATML_WITH_SYSTEM)
    assert not ours.knows_tools
    rendered = ours.render(tool_turns('{"city": "Paris"}'), tools=[WEATHER])
    system = rendered.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nYou can call these tools")
    assert json.dumps(WEATHER) in system and "<tool_call>" in system
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert f"<|im_start|>assistant\n{call}<|im_end|>" in rendered
    assert "<|im_start|>tool\n18 C<|im_end|>" in rendered


def test_tool_call_arguments_that_are_not_json_are_rejected():
    with pytest.raises(MessagesError, match="not valid JSON") as caught:
        ChatTemplate(TOOLS_TEMPLATE).render(tool_turns("{oops"))
    assert caught.value.param == "messages"
