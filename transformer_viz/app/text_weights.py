"""The sentences of one's own weights (checkpoint folders, download and upload), in English and Chinese;
text.CATALOGS merges them. The English refusals of an upload are the package's own sentences."""

from transformer_viz.weights.files import UPLOAD_SENTENCES

WEIGHTS_ENGLISH = {
    "weights.checkpoint": "checkpoint “{name}”",
    "weights.none": "none",
    "side.checkpoint_broken": "The checkpoint {name} cannot be used: {message}",
    "error.link_checkpoint": "This server has no checkpoint {name} for the {task} task (checkpoints for it: "
                             "{available}); the link shows the weights named above instead.",
    "banner.checkpoint": "Checkpoint “{name}” of this server, trained on the {task} task: {metric}.",
    "banner.uploaded": "Weights you uploaded (“{name}”) for the {task} task, trained {steps} steps.",
    "banner.unmeasured": "exact match not measured",
    "banner.checkpoint_shape": "This shape cannot hold the weights of checkpoint “{name}”: choose random weights, "
                               "then the checkpoint again, to get its shape.",
    "weights_io.title": "Your weights as files",
    "weights_io.nothing": "Train a model (or upload one) to download its weights.",
    "weights_io.cannot_save": "These weights hold values too large for a half-precision file (beyond ±65504, or "
                              "NaN): they cannot be downloaded. Train again with a smaller learning rate.",
    "weights_io.download": "Download these weights (.zip)",
    "weights_io.download_help": "{name}.zip holds {name}.safetensors (the weights, in half precision) and "
                                "{name}.json (shape, vocabularies, loss curve, exact match). Upload it here again, "
                                "load it in Python with load_pretrained(\"{name}\", folder), or put both files in a "
                                "folder the server lists (transformer-viz --checkpoints FOLDER).",
    "weights_io.upload": "Upload weights: the .safetensors and .json files, or one .zip (at most {limit} MB)",
    "weights_io.upload_help": "Weights of the task chosen in the sidebar, downloaded from this page or written by "
                              "python -m transformer_viz.train. Only safetensors files are read: a pickle (.pt, "
                              ".pth, .bin, .ckpt) is never loaded, because loading one can run code.",
    "weights_io.uploaded": "Uploaded {name} for the {task} task: every page now shows it (Weights: trained by you).",
    "weights_io.refused": "These files cannot be used: {message}",
    **{f"detail.upload.{reason}": sentence for reason, sentence in UPLOAD_SENTENCES.items()},
}

WEIGHTS_CHINESE = {
    "weights.checkpoint": "检查点 “{name}”",
    "weights.none": "没有",
    "side.checkpoint_broken": "检查点 {name} 无法使用：{message}",
    "error.link_checkpoint": "本服务器没有「{task}」任务的检查点 {name}（该任务的检查点：{available}）；链接改为显示上面选中的权重。",
    "banner.checkpoint": "本服务器的检查点 “{name}”，在「{task}」任务上训练：{metric}。",
    "banner.uploaded": "你上传的权重（“{name}”），用于「{task}」任务，训练了 {steps} 步。",
    "banner.unmeasured": "未测量完全匹配率",
    "banner.checkpoint_shape": "这个形状装不下检查点 “{name}” 的权重：先选随机权重，再重新选这个检查点，即可得到它的形状。",
    "weights_io.title": "把权重存成文件",
    "weights_io.nothing": "先训练（或上传）一个模型，才能下载它的权重。",
    "weights_io.cannot_save": "这些权重中有半精度文件存不下的值（超出 ±65504，或为 NaN）：无法下载。请用更小的学习率重新训练。",
    "weights_io.download": "下载这些权重（.zip）",
    "weights_io.download_help": "“{name}.zip” 中有 “{name}.safetensors”（半精度权重）和 “{name}.json”（形状、词表、损失曲线、"
                                "完全匹配率）。可以再上传到这里，在 Python 中用 “load_pretrained(\"{name}\", 文件夹)” 加载，"
                                "或把两个文件放进服务器列出的文件夹（“transformer-viz --checkpoints 文件夹”）。",
    "weights_io.upload": "上传权重：.safetensors 和 .json 两个文件，或一个 .zip（最多 {limit} MB）",
    "weights_io.upload_help": "侧边栏所选任务的权重，可以是从本页下载的，也可以是 “python -m transformer_viz.train” 写出的。"
                              "只读取 safetensors 文件：pickle（.pt、.pth、.bin、.ckpt）永远不会被加载，因为加载它可能运行代码。",
    "weights_io.uploaded": "已上传「{task}」任务的 {name}：现在每一页都显示它（权重：你在训练页训练的）。",
    "weights_io.refused": "这些文件无法使用：{message}",
    "detail.upload.pickle": "{file} 是 PyTorch 的 pickle 文件：pickle 在加载时可能运行代码，所以本应用从不加载它。"
                            "请上传 “python -m transformer_viz.train” 写出的 .safetensors 和 .json 文件。",
    "detail.upload.type": "{file} 不是 .safetensors、.json 或 .zip 文件。",
    "detail.upload.too_big": "{file} 有 {size} MB，最多只能上传 {limit} MB。",
    "detail.upload.count": "请上传一个检查点：它的 .safetensors 和 .json 文件，或一个包含这两个文件的 .zip（收到了 {count} 个文件）。",
    "detail.upload.missing": "缺少 {suffix} 文件：请把 .safetensors 和 .json 文件一起上传，或上传一个包含两者的 .zip。",
    "detail.upload.zip": "{file} 不是可读取的 .zip 文件。",
    "detail.upload.zip_content": "{file} 应当包含一个 .safetensors 和一个 .json 文件，但其中是：{members}。",
    "detail.upload.json": "{file} 不是检查点的 JSON 元数据（已损坏、不完整，或根本不是 JSON）。",
    "detail.upload.format": "{file} 不是本应用检查点的元数据：字段 {field} 缺失或有误。",
    "detail.upload.task": "{file} 指定的任务 {task!r} 在本应用中不存在。",
    "detail.upload.config": "{file} 描述的模型无法构建：{reason}",
    "detail.upload.vocab": "{file} 是为另一套词表训练的，与「{task}」任务现在的词表不同。",
    "detail.upload.fit": "{file} 描述的模型无法读取「{task}」任务的所有输入。",
    "detail.upload.size": "{file} 比它的元数据所描述的模型应有的大小还要大。",
    "detail.upload.checksum": "{file} 与它的元数据不匹配（校验和不同）：这两个文件不是一对，或其中一个已损坏。",
    "detail.upload.tensors": "{file} 中的张量不是这个模型的（有的缺失，有的多余）。",
    "detail.upload.dtype": "{file}：{tensor} 以 {dtype} 存储，而不是 float32、float16 或 bfloat16。",
    "detail.upload.shape": "{file}：{tensor} 的形状是 {shape}，但模型需要 {expected}。",
    "detail.upload.nonfinite": "{file}：{tensor} 含有 NaN 或无穷大的值。",
    "detail.upload.unreadable": "{file} 不是可读取的 safetensors 文件（已损坏，或根本不是 safetensors）。",
    "detail.upload.other_task": "这些权重是在「{task}」任务上训练的，而不是「{current_task}」：请先选择「{task}」，再重新上传。",
}
