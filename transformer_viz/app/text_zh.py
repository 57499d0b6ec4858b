"""中文文案：与 text.ENGLISH 同键。缺少的键自动回退到英文。"""

CHINESE = {
    "task.copy": "复制字母",
    "task.reverse": "倒序字母",
    "task.sort": "字母排序",
    "task.rotate": "循环左移两位",
    "task.en-fr": "英语 → 法语",
    "task.en-zh": "英语 → 中文",
    "attention.cell_query": "单元格：查询",
    "decoding.one_step": "模型第一步就写出了 <eos>：只有一步可看。",
    "error.link_weights": "在训练页训练出的权重只存在于训练它的那个会话中；此链接改为显示上面选中的权重。",
    "attention.no_cell": "—（点击一个单元格）",
    "training.too_long": "这次训练会占用课堂服务器两分钟以上：请减少步数、批大小或缩小模型。",
    "training.waiting": "正在排队：你前面还有 {place} 个同学的训练。本服务器同时训练 {n} 个模型，轮到你时会自动开始。",
    "training.limits": "本服务器同时训练 {n} 个模型（其余的排队等候），每个训练占用一个处理器核心，最多 {steps} 步。点「停止」会在当前这一步结束后停下，并保留已经学到的内容。",
    "error.link_limits": "本服务器能构建的模型最大为：d_model {d_model}、{heads} 个头、每个堆栈 {layers} 层、d_ff {d_ff}、{tokens} 个词元。",
    "nav.overview": "总览",
    "nav.embeddings": "词嵌入与位置编码",
    "nav.attention": "注意力",
    "nav.masks": "掩码",
    "nav.head": "单个注意力头内部",
    "nav.decoding": "解码",
    "nav.training": "训练",
    "side.language": "语言",
    "side.model": "模型",
    "side.source": "模型来源",
    "source.toy": "玩具模型",
    "source.hf": "Hugging Face 模型",
    "side.hf_model": "Hugging Face 模型：本地文件夹或模型名",
    "side.hf_download": "允许从 Hub 下载",
    "side.hf_download_help": "关闭：只加载本服务器上的文件夹，或已在其 Hugging Face 缓存中的模型。打开：此处找不到的名字"
                             "会被下载（一个翻译模型有几百 MB）。",
    "side.hf_no_downloads": "本服务器只加载已经在它上面的模型（TVIZ_HF_DOWNLOADS=0）。",
    "side.hf_help": "Marian、BART 或 T5 编码器-解码器，例如 Helsinki-NLP/opus-mt-en-zh。输入由模型自己的分词器切成子词；"
                    "形状是模型自己的。",
    "side.hf_missing": "使用 Hugging Face 模型需要安装扩展：pip install 'transformer_viz[hf]'。",
    "detail.hf.missing": "无法加载 Hugging Face 模型：{reason}。",
    "detail.hf.name": "请给出一个 Hugging Face 模型：本地文件夹，或像 Helsinki-NLP/opus-mt-en-zh 这样的模型名。",
    "detail.hf.not_here": "无法从本地文件夹或本地缓存加载 {name!r}（下载已关闭）：{cause}",
    "detail.hf.not_on_hub": "无法从 Hugging Face Hub 加载 {name!r}：{cause}",
    "detail.hf.family": "这里不追踪 {model_type!r} 类型的 Hugging Face 模型：请选择 Marian、BART 或 T5 编码器-解码器"
                        "（例如 Helsinki-NLP/opus-mt-en-zh、facebook/bart-base、t5-small）。",
    "detail.hf.too_big": "{name!r} 有 {parameters:,} 个参数；这台服务器最多加载 {limit:,} 个参数的模型。",
    "detail.hf.empty": "输入是空的：请输入一个句子。",
    "detail.hf.too_long": "输入有 {count} 个词元；这台服务器最多读取 {limit} 个。",
    "banner.hf": "Hugging Face 模型 {name}（{family}）：{layers} + {decoder_layers} 层 × {heads} 个头，"
                 "d_model {d_model}，使用它自己的权重和分词器。",
    "banner.hf_t5": "T5 的分数是 q·k，不除以 √d_k（这一缩放已并入权重）；自注意力的分数还加上一个学到的相对位置偏置。",
    "embeddings.no_positions": "这个模型不给嵌入加位置编码：像 T5 一样，它为每个相对距离（分桶）学一个偏置，加到每个"
                               "自注意力分数上。注意力页上的分数已包含这个偏置。",
    "hf.toy_only": "这一页作用于玩具模型：训练、修改或比较它们的权重。请在侧边栏把模型来源选为「玩具模型」后使用。",
    "side.task": "任务",
    "side.weights": "权重",
    "weights.pretrained": "预训练（随应用提供）",
    "weights.random": "随机（未训练）",
    "weights.trained": "你在训练页训练的",
    "side.weights_lost": "这个形状装不下“{weights}”权重（矩阵大小不同），所以模型现在是随机的。掩码值和“动手破坏”页的开关会保留权重。",
    "side.shape": "结构与变体",
    "side.d_model": "d_model（每个词向量的维度）",
    "side.n_heads": "注意力头数（只列出 d_model 的约数）",
    "side.n_encoder_layers": "编码器层数",
    "side.n_decoder_layers": "解码器层数",
    "side.d_ff": "d_ff（前馈网络宽度）",
    "side.max_len": "max_len（模型能读的最长序列）",
    "side.max_len_task": "任务默认",
    "side.positional": "位置编码",
    "positional.sinusoidal": "正弦（论文，sin/cos 交错）",
    "positional.sinusoidal_concat": "正弦，[sin | cos] 两半拼接（TensorFlow）",
    "positional.learned": "可学习的位置表（BERT）",
    "positional.none": "无（注意力只看到一袋词）",
    "side.norm_first": "LayerNorm 的位置",
    "norm.pre": "Pre-LN：x + f(LayerNorm(x))",
    "norm.post": "Post-LN：LayerNorm(x + f(x))（论文）",
    "side.scale_embeddings": "词嵌入乘以 √d_model",
    "side.embed_norm": "对嵌入之和做 LayerNorm",
    "side.mask_value": "被遮挡分数的填充值",
    "side.seed": "随机权重的种子",
    "side.reset": "回到预训练模型",
    "side.heads_fixed": "{heads} 个头无法均分 d_model = {d_model}（每个头分到 d_model / 头数 维）：改用 {fitting} 个头。",
    "side.input": "输入",
    "side.src_text": "源文本",
    "side.tgt_text": "用于教师强制的目标文本（留空则贪心解码）",
    "side.examples": "示例",
    "side.link_help": "复制地址栏：它会恢复当前的模型、输入和选择。",
    "banner.random": "随机权重——去训练页训练它，或回到预训练模型。",
    "banner.trained": "你在训练页为「{task}」任务训练的权重（{steps} 步）。",
    "banner.pretrained": "在「{task}」任务上预训练：{metric}。",
    "banner.metric": "在未见过的输入上完全匹配率 {exact:.1%}",
    "error.config": "无法构建这个模型：{message}",
    "error.input": "无法读取这个输入：{message}",
    "error.link": "链接中的部分设置无法使用，已重置：{names}。",
    "error.checkpoint": "预训练权重加载失败（{message}），改为显示随机权重。",
    "warn.unknown": "不在模型词表中，显示为 <unk>：{tokens}",
    "tokens.source": "源序列词元",
    "tokens.target": "解码器输入词元",
    "tokens.output": "模型输出",
    "detail.text.empty": "{side}是空的：请至少输入一个{unit}。",
    "detail.text.too_long_for_task": "{side}有 {count} {units}，但「{task}」任务最多只读 {limit} {limit_units}。请缩短一些。",
    "detail.text.too_long_for_model": "{side}有 {count} {units}，但这个模型（max_len {max_len}）最多只读 {limit} "
                                      "{limit_units}。请缩短一些。",
    "detail.config.heads": "d_model = {d_model} 无法均分给 n_heads = {n_heads} 个头：每个头分到 d_model / n_heads 维，"
                           "所以 n_heads 必须整除 d_model（d_model = {d_model} 时可以选 {divisors} 中的一个）。",
    "detail.config.odd_d_model": "正弦位置编码把每个正弦和一个余弦配成一对，所以 d_model 必须是偶数，现在 d_model = "
                                 "{d_model}。请选一个偶数的 d_model，或改用可学习的位置编码。",
    "detail.checkpoint.missing": "没有名为 {name!r} 的预训练模型（{folder} 中有：{available}）。可以这样训练一个：{command}",
    "detail.checkpoint.bad": "预训练模型 {name!r} 的文件 {file} 已损坏，或与它的任务不符。请重新训练：{command}",
    "detail.server.task": "未知的任务 {task!r}；已有的任务：{known}",
    "detail.server.beyond": "{names} 超出了这台服务器能构建的范围（见侧边栏中的取值范围）",
    "detail.word.input": "输入",
    "detail.word.target": "目标文本",
    "detail.word.character": "字符",
    "detail.word.characters": "个字符",
    "detail.word.word": "词",
    "detail.word.words": "个词",
    "overview.title": "总览：整个模型一目了然",
    "overview.intro": (
        "编码器-解码器 Transformer 用**编码器**读入源句子，再用**解码器**一次写出一个词元。下图每个方块都标出"
        "它产生的张量的实时形状和参数量。点击方块，打开查看其内部的页面。"
    ),
    "overview.open": "打开对应的页面",
    "overview.total": "参数总数",
    "embeddings.title": "词嵌入与位置编码",
    "embeddings.intro": (
        "每个词元编号选中一张可学习表格中的一行：它的**词嵌入**，一个 d_model 维的向量。注意力本身分不清词序："
        "交换两个词元，它们的输出也只是跟着交换。因此要给每个词嵌入加上一个**位置编码**——每个位置一个向量。"
        "两者之和就是第一层的输入。"
    ),
    "embeddings.side": "显示",
    "embeddings.pipeline": "词嵌入 + 位置编码 = 第一层的输入",
    "embeddings.curves": "几个维度随位置的变化",
    "embeddings.curves_help": (
        "每两个维度是同一频率的一个正弦和一个余弦。低维转得快，高维转得慢，就像钟表的指针：合在一起，每个位置都有"
        "独一无二的图案，而固定的偏移 k 在任何位置都是同一个旋转。"
    ),
    "embeddings.curves_help_learned": "这个模型像学习词嵌入一样学习位置向量：一张每个位置一行的表，没有公式。训练之后，相邻位置的向量"
                                      "往往很像；随机初始化时，它们只是噪声。",
    "embeddings.curves_help_none": "这个模型不加位置编码：每个位置加上的都是零。于是注意力只看到一袋词元：交换其中两个，它们的输出也只是"
                                   "跟着交换。",
    "embeddings.dims": "要画的维度",
    "embeddings.similarity": "两个位置有多像？",
    "embeddings.similarity_help": (
        "位置向量的余弦相似度：靠近对角线的位置彼此相似，相距越远差别越大。正因如此，注意力才能学会“看左边一个”。"
    ),
    "embeddings.variants": "各种变体并排比较",
    "embeddings.variants_help": (
        "论文把 sin 和 cos 交错排列；TensorFlow 先放所有 sin，再放所有 cos，而且频率也略有不同：频率取对数后每对递减 "
        "ln(10⁴)/(d/2 − 1)，而不是 ln(10⁴)/(d/2)，所以最慢的频率恰好是 1/10⁴。有一篇教程把指数错乘了 2"
        "（成了 4i/d 而不是 2i/d），频率全错了：对比看看。"
    ),
    "attention.title": "注意力",
    "attention.intro": (
        "每个查询词元（q）问每个键词元（k）：你和我有多相关？分数 = q·k / √d_k。softmax 把每一行分数变成"
        "和为 1 的权重，输出就是值向量（v）的加权和。每个头都用自己的投影做这件事，所以不同的头可以关注不同的东西。"
    ),
    "attention.kind": "哪一种注意力",
    "kind.encoder_self.help": "源词元看源词元；只遮住填充。",
    "kind.decoder_self.help": "目标词元只能看更早的目标词元：未来被遮住。",
    "kind.cross.help": "每个目标位置看向源句子：对齐关系就出现在这里。每一行标的是解码器在该位置读入的词元（第一行是 <bos>），它要写出的是下一个词元，所以标着“le”的那一行看向的是“le”之后那个词对应的源词。",
    "attention.value": "绘制",
    "value.weights": "权重（softmax 之后）",
    "value.scores": "缩放后的分数 q·k/√d_k",
    "value.masked_scores": "掩码后的分数",
    "attention.grid_help": (
        "行是层，列是头，所有小图共用一个色标：权重为 0 到 1，分数以 0 为中心对称。鼠标悬停可看到查询、键、权重和缩放后的分数。点击一个小图（或用下方的"
        "选择框）放大查看该头。"
    ),
    "attention.layer": "层",
    "attention.head": "头",
    "attention.large": "第 {layer} 层，第 {head} 个头",
    "attention.lines": "连线视图：谁在看谁",
    "attention.query": "查询",
    "attention.key": "键",
    "attention.all_queries": "全部",
    "attention.cell": "点击热力图中的单元格（或在上方选择），在下方查看它的权重是怎样算出来的。",
    "attention.cell_title": "查询 {query} → 键 {key}",
    "attention.entropy": "每个头有多专注？",
    "attention.entropy_help": "以比特为单位的熵：0 表示一个头把全部权重放在一个键上；虚线是平均分给所有允许的键时的值。",
    "cell.dot": "q·k",
    "cell.scale": "÷ √d_k（d_k = {d_head}）",
    "cell.scale_folded": "÷ 1（√d_k 已并入 W_Q）",
    "cell.bias": "+ 相对位置偏置",
    "cell.score": "分数",
    "cell.mask": "掩码（✓ = 可以关注）",
    "cell.weight_short": "权重",
    "cell.weight": "权重（该行的 softmax）",
    "cell.row": "查询 {query} 的整行：softmax 把这些掩码后的分数变成和为 1 的权重。",
    "cell.masked_score": "掩码后的分数",
    "masks.title": "掩码",
    "masks.intro": (
        "掩码规定每个查询可以使用哪些键（这里：真 = 可以关注）。**填充掩码**遮住把短句补齐到批长度的 <pad>。"
        "**前瞻掩码**在解码器中遮住未来，使得一次性用整个目标训练时无法作弊。解码器把两者结合起来。"
        "没有目标文本时，解码器读的是模型自己的答案，就像训练批中存放答案那样。"
    ),
    "masks.pad_help": "一个批次里，较短的句子会用 <pad> 补齐到最长句的长度。把这个输入填充一下，就能看到填充掩码的作用（0 = 不填充）。答案不会改变：没有任何查询会看向 <pad>。",
    "masks.steps": "掩码对一个头做了什么",
    "masks.steps_help": (
        "被遮挡的分数被替换成一个很大的负数（{value}）。softmax 之后 e 的这个次方就是 0，所以被遮挡的键权重恰好为 0，"
        "其余权重之和仍为 1。"
    ),
    "masks.pad_to": "把输入填充到长度（如同在批次中）",
    "head.title": "单个注意力头内部",
    "head.intro": "用模型的真实数值，一步步演示一个头的缩放点积注意力。选一个小模型（如 d_model 8、2 个头）就能读出每个数。",
    "head.wide": "{step}（矩阵宽 {d_model} 维：点开查看）",
    "head.intro_hf": "用模型的真实数值，一步步演示一个头的缩放点积注意力：从该层的输入和模型自己的投影权重重新计算，并与它的"
                     "运行结果核对。",
    "head.small": "使用小模型（d_model 8、2 个头、1 层）",
    "head.step.x": "输入 X：每个词元一行（Pre-LN 模型中是 LayerNorm 之后）。",
    "head.step.projections": "三个可学习的矩阵把 X 变成这个头的查询、键和值。",
    "head.step.qk": "每个查询与每个键做点积。",
    "head.step.scale": "除以 √d_k，使分数不随头的维度增大而变大，避免 softmax 饱和。",
    "head.step.scale_t5": "T5 不除以 √d_k（改为把 W_Q 初始化得更小）；在自注意力中，它为查询到键的每种距离加上一个学到的"
                          "偏置 B：词序正是从这里进入模型的。",
    "head.step.mask": "被屏蔽的分数被替换为掩码值，因此 softmax 给它们的权重为 0。",
    "head.step.softmax": "softmax 把每一行变成和为 1 的权重。",
    "head.step.weighted_sum": "每一行输出是各值向量的加权和。",
    "head.step.concat": "所有头的输出并排拼接……",
    "head.step.output": "……再由输出投影 W_O 混合。",
    "head.dot": "一个分数从何而来",
    "decoding.title": "解码：一次一个词元",
    "decoding.intro": (
        "推理时解码器从 <bos> 开始，预测最可能的下一个词元，把它接上，再运行一次，直到预测出 <eos>。"
        "拖动滑块回放每一步。"
    ),
    "decoding.step": "步",
    "decoding.chosen": "第 {step} 步：解码器读到 {prefix}，选择 {token}。",
    "decoding.topk": "下一个词元的概率",
    "decoding.self": "到目前为止的解码器自注意力",
    "decoding.cross": "每一步在源句中看向哪里",
    "decoding.cross_full": "到目前为止每个位置的交叉注意力",
    "decoding.teacher_forced": "已设置目标文本，因此无需解码：在侧边栏中清空它。",
    "training.title": "训练",
    "training.from": "起点",
    "training.from_fresh": "新模型（随机权重）",
    "training.from_current": "当前显示的权重",
    "training.intro": (
        "在玩具任务上训练一个模型，看着损失下降、注意力逐渐成形（默认模型训练几百步需要几秒到一分钟，取决于服务器有多忙）。训练使用教师强制：解码器拿到正确的前文，"
        "学习预测下一个词元。"
    ),
    "training.steps": "训练步数",
    "training.lr": "学习率",
    "training.batch": "批大小",
    "training.start": "训练",
    "training.stop": "停止",
    "training.progress": "第 {step} / {total} 步 · 损失 {loss:.3f} · 准确率 {accuracy:.1%}",
    "training.done": "用 {seconds:.1f} 秒训练了 {steps} 步。其他页面现在显示你训练的模型。",
    "training.curve": "损失与准确率",
    "training.animation": "注意力逐渐成形",
    "training.animation_title": "交叉注意力，最后一层解码器（各头平均）",
    "training.eval": "在新输入上的完全匹配率：{exact:.1%}",
    "training.none": "本次会话还没有训练过。",
}
