"""Hugging Face-native Linformer models (RoBERTa architecture) and RoBERTa/BERT conversion.

Importing this package (or any module in it) registers `model_type="linformer"` with `AutoConfig`,
`AutoModel`, `AutoModelForMaskedLM`, `AutoModelForSequenceClassification` and
`AutoModelForTokenClassification`, so `AutoModel.from_pretrained(dir)` loads a saved Linformer.
This is the only place that registers: `import linformer_kit` alone does not (it stays light).
"""

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

from linformer_kit.models.configuration_linformer import (
    CLASSIFIER_POOLINGS,
    LAYER_NORMS,
    POSITION_STYLES,
    ClassifierPooling,
    LayerNormPosition,
    LinformerConfig,
    PositionStyle,
    parse_projected_length,
)
from linformer_kit.models.conversion import Conversion
from linformer_kit.models.convert import (
    ConvertConfig,
    convert_checkpoint,
    from_bert,
    from_roberta,
    is_projection_key,
    with_linformer_options,
)
from linformer_kit.models.linformer_heads import (
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
)
from linformer_kit.models.modeling_linformer import LinformerModel, LinformerPreTrainedModel

AutoConfig.register("linformer", LinformerConfig, exist_ok=True)
AutoModel.register(LinformerConfig, LinformerModel, exist_ok=True)
AutoModelForMaskedLM.register(LinformerConfig, LinformerForMaskedLM, exist_ok=True)
AutoModelForSequenceClassification.register(
    LinformerConfig, LinformerForSequenceClassification, exist_ok=True
)
AutoModelForTokenClassification.register(LinformerConfig, LinformerForTokenClassification, exist_ok=True)

__all__ = [
    "CLASSIFIER_POOLINGS",
    "LAYER_NORMS",
    "POSITION_STYLES",
    "ClassifierPooling",
    "Conversion",
    "ConvertConfig",
    "LayerNormPosition",
    "LinformerConfig",
    "LinformerForMaskedLM",
    "LinformerForSequenceClassification",
    "LinformerForTokenClassification",
    "LinformerModel",
    "LinformerPreTrainedModel",
    "PositionStyle",
    "convert_checkpoint",
    "from_bert",
    "from_roberta",
    "is_projection_key",
    "parse_projected_length",
    "with_linformer_options",
]
