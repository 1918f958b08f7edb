// A `task_local!` key's thread-local is private to the key: code outside cannot borrow it
// and hold the borrow across the key's scope, which would make the scope's swap-back fail.
escapement::task_local! {
    static NUMBER: u32;
}

fn main() {
    NUMBER.inner.with(|cell| std::mem::forget(cell.borrow_mut()));
}
