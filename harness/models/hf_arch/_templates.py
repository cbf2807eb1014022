"""Fallback chat templates, used only when a checkpoint ships none (tiny test checkpoints, old exports).

Each follows the family's published prompt format; ``@@audio@@`` is replaced by the processor's own
audio placeholder token. Content parts are matched on ``type`` ("audio" / "text").
"""

_PARTS = (
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}@@audio@@{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
)

CHATML = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' and @@default_system@@ %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n" + _PARTS + "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

PHI4 = (
    "{% for message in messages %}<|{{ message['role'] }}|>" + _PARTS + "<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

GEMMA = (
    "{{ bos_token }}{% for message in messages %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    + _PARTS
    + "<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

GRANITE = (
    "{% for message in messages %}<|start_of_role|>{{ message['role'] }}<|end_of_role|>"
    + _PARTS
    + "<|end_of_text|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|start_of_role|>assistant<|end_of_role|>{% endif %}"
)


def chatml(audio: str, *, default_system: bool = True) -> str:
    return CHATML.replace("@@audio@@", audio).replace("@@default_system@@", "true" if default_system else "false")


def fill(template: str, audio: str) -> str:
    return template.replace("@@audio@@", audio)
