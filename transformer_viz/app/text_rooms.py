"""The class room's sentences (transformer_viz/app/rooms.py), in English and Chinese; text.CATALOGS merges them."""

ROOMS_ENGLISH = {
    "room.title": "Class room",
    "room.start": "Start a room (teacher)",
    "room.start_help": "Your students follow your page and view, on their own screens.",
    "room.code_is": "Room code",
    "room.qr": "QR code of the room's link",
    "room.teacher_help": (
        "Students open the link (or scan the code, or type the room code in this section): they see your page "
        "and view within 2 seconds of each change."
    ),
    "room.local_link": (
        "This link names this computer: students' devices need the server's address on your network (open the "
        "app through it and start the room again)."
    ),
    "room.shared": "Students see: {page} (change {version})",
    "room.end": "End room",
    "room.code": "Room code",
    "room.join": "Join",
    "room.following": "Following the teacher in room {code}.",
    "room.following_help": (
        "Your own changes last until the teacher's next change, which replaces them. To explore on your own, "
        "leave the room."
    ),
    "room.leave": "Leave (explore on my own)",
    "room.left": "You left room {code} to explore on your own.",
    "room.rejoin": "Rejoin room {code}",
    "room.bad_code": "A room code has {length} letters and digits, e.g. K7QX: {typed} is not one.",
    "room.unknown": (
        "There is no room {code}: check the code. A room ends when its teacher ends it, or after {hours} hours "
        "without a change."
    ),
    "room.ended": "Room {code} has ended.",
    "room.expired": "Your room {code} had no change for {hours} hours and has ended: start a new one.",
    "room.unavailable": "Class rooms are unavailable on this server right now ({message}).",
    "room.trained": (
        "The teacher shows weights trained in the teacher's own session: you see the pretrained ones (or random "
        "weights, for a shape that has none)."
    ),
    "room.too_large": "This view is too large to share (a very long input?): your students still see the previous one.",
}

ROOMS_CHINESE = {
    "room.title": "课堂",
    "room.start": "开设课堂（教师）",
    "room.start_help": "学生在自己的屏幕上跟随你的页面和视图。",
    "room.code_is": "课堂代码",
    "room.qr": "课堂链接的二维码",
    "room.teacher_help": "学生打开链接（或扫描二维码，或在本栏输入课堂代码）：你每次改动后 2 秒内，他们就会看到你的页面和视图。",
    "room.local_link": "此链接指向本机：学生的设备需要服务器在你所在网络中的地址（用该地址打开应用，再重新开设课堂）。",
    "room.shared": "学生看到：{page}（第 {version} 次改动）",
    "room.end": "结束课堂",
    "room.code": "课堂代码",
    "room.join": "加入",
    "room.following": "正在跟随课堂 {code} 的老师。",
    "room.following_help": "你自己的改动会保留到老师的下一次改动，届时被老师的视图取代。想自己探索，请离开课堂。",
    "room.leave": "离开（自己探索）",
    "room.left": "你已离开课堂 {code}，正在自己探索。",
    "room.rejoin": "重新加入课堂 {code}",
    "room.bad_code": "课堂代码由 {length} 个字母和数字组成，例如 K7QX：{typed} 不是课堂代码。",
    "room.unknown": "没有课堂 {code}：请检查代码。老师结束课堂后，或课堂 {hours} 小时没有改动后，课堂即结束。",
    "room.ended": "课堂 {code} 已结束。",
    "room.expired": "你的课堂 {code} 已有 {hours} 小时没有改动，已经结束：请开设新的课堂。",
    "room.unavailable": "本服务器的课堂功能暂时不可用（{message}）。",
    "room.trained": "老师展示的是在老师自己的会话中训练的权重：你看到的是预训练权重（若此形状没有预训练权重，则为随机权重）。",
    "room.too_large": "此视图太大，无法共享（输入太长？）：学生看到的仍是上一个视图。",
}
